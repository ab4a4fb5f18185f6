import type { StoredMessage } from "../children/protocol";

/** One message owed to another object. */
export interface OutboxRow extends StoredMessage {
  id: string;
  /** The receiver's address, as JSON. */
  target: string;
  attempts: number;
  next_at: number;
  created_at: number;
}

/** The back-off of a failed delivery (its `attempts`-th): 1 s, doubling, at most 5 minutes. */
export function retryDelayMs(attempts: number): number {
  return Math.min(1000 * 2 ** Math.min(attempts - 1, 16), 300_000);
}

/**
 * How long a message is leased for its first delivery, which leaves at once from the instance that
 * queued it: 5 s, the default claim timeout, so it adds no wake of its own to the one that backs
 * the attempt that settled the run. A first delivery that fails is rescheduled after
 * `retryDelayMs(1)`; a message whose instance died before it left is sent again by the next
 * instance on its first wake, at the latest when this lease ends.
 */
export const FIRST_LEASE_MS = 5_000;

/**
 * The SQL of `dk_tasks_outbox`: messages this object owes other objects, one per id
 * (`settled:<key>`, `cancel:<key>`), each stored as its envelope and its one large field apart
 * (see `StoredMessage`), retried by the alarm until the receiver acknowledges it. Each method is
 * one statement.
 */
export class OutboxStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * Queues `message` for `target` as `id` (nothing when that id is queued already), leased for its
   * first delivery: this instance sends it at once, and it is due again {@link FIRST_LEASE_MS}
   * after `now` unless that delivery was acknowledged. The lease is written with the message, so
   * the delivery that leaves at once writes nothing before it leaves.
   */
  enqueue(id: string, target: string, message: StoredMessage, now: number): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_outbox (id, target, envelope, payload, attempts, next_at, created_at)
       VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING`,
      id,
      target,
      message.envelope,
      message.payload,
      now + FIRST_LEASE_MS,
      now,
    );
  }

  /** The messages of `ids` still owed (an acknowledged one is gone). */
  byIds(ids: readonly string[]): OutboxRow[] {
    return this.#sql
      .exec<OutboxRow & Record<string, SqlStorageValue>>(
        `SELECT id, target, envelope, payload, attempts, next_at, created_at FROM dk_tasks_outbox
         WHERE id IN (SELECT value FROM json_each(?))`,
        JSON.stringify(ids),
      )
      .toArray();
  }

  /** Messages due at `now`, earliest first. */
  due(now: number, limit: number): OutboxRow[] {
    return this.#sql
      .exec<OutboxRow & Record<string, SqlStorageValue>>(
        `SELECT id, target, envelope, payload, attempts, next_at, created_at FROM dk_tasks_outbox
         WHERE next_at <= ? ORDER BY next_at LIMIT ?`,
        now,
        limit,
      )
      .toArray();
  }

  /** The earliest time a message is due, or null when the outbox is empty. */
  nextAt(): number | null {
    return this.#sql
      .exec<{ at: number | null }>("SELECT min(next_at) AS at FROM dk_tasks_outbox")
      .one().at;
  }

  /**
   * Makes every owed message due at `now`: a new instance of the object does this once, since a
   * delivery the previous instance had in flight (its lease written) will never be answered to it.
   * A message waiting out a back-off is tried once more too. Reads only rows due later, by the
   * `next_at` index; returns how many it brought forward.
   */
  recoverLeases(now: number): number {
    return this.#sql.exec("UPDATE dk_tasks_outbox SET next_at = ? WHERE next_at > ?", now, now)
      .rowsWritten;
  }

  /** Delivered (acknowledged) or dropped. */
  delete(id: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_outbox WHERE id = ?", id);
  }

  /** Delivered (acknowledged), several at once. */
  deleteMany(ids: readonly string[]): void {
    this.#sql.exec(
      "DELETE FROM dk_tasks_outbox WHERE id IN (SELECT value FROM json_each(?))",
      JSON.stringify(ids),
    );
  }

  /** A delivery leaves: tried again at `nextAt` unless it is acknowledged first. */
  retryAt(id: string, attempts: number, nextAt: number): void {
    this.#sql.exec(
      "UPDATE dk_tasks_outbox SET attempts = ?, next_at = ? WHERE id = ?",
      attempts,
      nextAt,
      id,
    );
  }
}
