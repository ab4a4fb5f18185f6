import type { ObjectAddress, StartMessage } from "../children/protocol";

/**
 * One row of `dk_tasks_links`: a child run's side of its exchange with the parent that started it,
 * by the exchange's key. It lives from the start (or from a cancel that came first) until
 * `expires_at`, set when the child settles: as long as a retried start may still arrive, it answers
 * the same child run (or, for a cancel that came first, starts nothing), whether or not retention
 * deleted the run itself.
 */
export interface LinkRow {
  key: string;
  secret: string;
  /** The parent's address (JSON); null for a link a cancel wrote before its start arrived. */
  parent: string | null;
  parent_run_id: string | null;
  step: string | null;
  idx: number | null;
  definition: string | null;
  /** The child run; null for a link a cancel wrote before its start arrived. */
  child_run_id: string | null;
  expires_at: number | null;
}

type Row<T> = T & Record<string, SqlStorageValue>;

const COLUMNS =
  "key, secret, parent, parent_run_id, step, idx, definition, child_run_id, expires_at";

/** The SQL of `dk_tasks_links` (see {@link LinkRow}). Each method is one statement. */
export class LinkStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** The link of exchange `key`, or undefined. */
  get(key: string): LinkRow | undefined {
    return this.#sql
      .exec<Row<LinkRow>>(`SELECT ${COLUMNS} FROM dk_tasks_links WHERE key = ?`, key)
      .toArray()[0];
  }

  /** True when run `runId` was started by a parent in another object (it has a link). */
  isChild(runId: string): boolean {
    return (
      this.#sql.exec("SELECT 1 FROM dk_tasks_links WHERE child_run_id = ?", runId).toArray()
        .length > 0
    );
  }

  /** Links child run `childRunId` to the start that created it. */
  link(message: StartMessage, childRunId: string): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_links
         (key, secret, parent, parent_run_id, step, idx, definition, child_run_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      message.key,
      message.secret,
      JSON.stringify(message.parent satisfies ObjectAddress),
      message.parentRunId,
      message.step,
      message.index,
      message.definition,
      childRunId,
    );
  }

  /** A cancel came before its start: the start, when it comes, starts nothing. */
  tombstone(key: string, secret: string, expiresAt: number): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_links (key, secret, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (key) DO NOTHING`,
      key,
      secret,
      expiresAt,
    );
  }

  /**
   * The child run settled: its link is kept until `expiresAt`, for a start retried late. Answers
   * the link as it was, or undefined when the run has no link or it was already settled.
   */
  settled(childRunId: string, expiresAt: number): LinkRow | undefined {
    return this.#sql
      .exec<Row<LinkRow>>(
        `UPDATE dk_tasks_links SET expires_at = ? WHERE child_run_id = ? AND expires_at IS NULL
         RETURNING ${COLUMNS}`,
        expiresAt,
        childRunId,
      )
      .toArray()[0];
  }

  /** The earliest time a link expires, or null. */
  nextExpiry(): number | null {
    return this.#sql
      .exec<{ at: number | null }>("SELECT min(expires_at) AS at FROM dk_tasks_links")
      .one().at;
  }

  /** Deletes up to `limit` links expired at `now`; answers how many. */
  sweep(now: number, limit: number): number {
    return this.#sql.exec(
      `DELETE FROM dk_tasks_links WHERE key IN
         (SELECT key FROM dk_tasks_links WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`,
      now,
      limit,
    ).rowsWritten;
  }
}
