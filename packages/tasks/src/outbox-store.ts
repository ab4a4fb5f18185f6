import type { ChildMessage, ObjectAddress } from "./child-messages";

/** One message owed to another object. */
export interface OutboxRow {
  id: string;
  target: string;
  message: string;
  attempts: number;
  next_at: number;
  created_at: number;
}

/** A child's link to the run that started it. */
export interface ParentLink {
  parent: string;
  parent_run_id: string;
  key: string;
}

/**
 * The SQL of what an object owes other objects: `dk_tasks_parents` (a child run's link to its
 * parent, from its start until its settlement is queued) and `dk_tasks_outbox` (messages to
 * deliver, one per id: `settled:<child run id>`, `cancel:<child run id>`, retried by the alarm
 * until the receiver acknowledges them). Each method is one statement.
 */
export class OutboxStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** Links a child run to its parent (nothing when it is linked already). */
  link(childRunId: string, parent: ObjectAddress, parentRunId: string, key: string): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_parents (child_run_id, parent, parent_run_id, key) VALUES (?, ?, ?, ?)
       ON CONFLICT (child_run_id) DO NOTHING`,
      childRunId,
      JSON.stringify(parent),
      parentRunId,
      key,
    );
  }

  /** Takes a child run's link (deleting it), or undefined for a run no other object started. */
  takeLink(childRunId: string): ParentLink | undefined {
    return this.#sql
      .exec<ParentLink & Record<string, SqlStorageValue>>(
        "DELETE FROM dk_tasks_parents WHERE child_run_id = ? RETURNING parent, parent_run_id, key",
        childRunId,
      )
      .toArray()[0];
  }

  /** Queues `message` for `target` as `id`, due at `now` (nothing when that id is queued already). */
  enqueue(id: string, target: string, message: ChildMessage, now: number): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_outbox (id, target, message, attempts, next_at, created_at)
       VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (id) DO NOTHING`,
      id,
      target,
      JSON.stringify(message),
      now,
      now,
    );
  }

  /** Messages due at `now`, earliest first. */
  due(now: number, limit: number): OutboxRow[] {
    return this.#sql
      .exec<OutboxRow & Record<string, SqlStorageValue>>(
        `SELECT id, target, message, attempts, next_at, created_at FROM dk_tasks_outbox
         WHERE next_at <= ? ORDER BY next_at LIMIT ?`,
        now,
        limit,
      )
      .toArray();
  }

  /** The earliest time a message is due, or null when the outbox is empty. */
  nextAt(): number | null {
    const row = this.#sql
      .exec<{ at: number | null }>("SELECT min(next_at) AS at FROM dk_tasks_outbox")
      .one();
    return row.at;
  }

  /** Delivered (acknowledged) or dropped. */
  delete(id: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_outbox WHERE id = ?", id);
  }

  /** A failed delivery: tried again at `nextAt`. */
  retryAt(id: string, attempts: number, nextAt: number): void {
    this.#sql.exec(
      "UPDATE dk_tasks_outbox SET attempts = ?, next_at = ? WHERE id = ?",
      attempts,
      nextAt,
      id,
    );
  }
}
