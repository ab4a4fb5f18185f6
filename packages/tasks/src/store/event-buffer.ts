import type { EventRow } from "./rows";

/**
 * The SQL of `dk_tasks_events`: events sent to a run that was not waiting on them, kept in arrival
 * order until a wait consumes them. One statement per method.
 */
export class EventBuffer {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** Buffers an event for a run that is not waiting on it. */
  bufferEvent(runId: string, type: string, payload: string, now: number): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_events (run_id, seq, type, payload, at)
       SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ? FROM dk_tasks_events WHERE run_id = ?`,
      runId,
      type,
      payload,
      now,
      runId,
    );
  }

  /** The oldest buffered event of a type, if any. */
  peekEvent(runId: string, type: string): EventRow | undefined {
    return this.#sql
      .exec<EventRow & Record<string, SqlStorageValue>>(
        `SELECT seq, type, payload FROM dk_tasks_events WHERE run_id = ? AND type = ?
         ORDER BY seq LIMIT 1`,
        runId,
        type,
      )
      .toArray()[0];
  }
  /** Deletes one buffered event (a wait consumed it). */
  deleteEvent(runId: string, seq: number): void {
    this.#sql.exec("DELETE FROM dk_tasks_events WHERE run_id = ? AND seq = ?", runId, seq);
  }

  /** Deletes every buffered event of a run. */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_events WHERE run_id = ?", runId);
  }
}
