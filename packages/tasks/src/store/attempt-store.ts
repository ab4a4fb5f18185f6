/** How an attempt ended, as stored in `dk_tasks_attempts.outcome`. */
export type AttemptOutcome =
  | "sleep"
  | "event"
  | "retry"
  | "paused"
  | "interrupted"
  /** The attempt settled the run, which a restart then took back (see `settled`). */
  | "completed"
  | "failed"
  | "cancelled";

/** One row of `dk_tasks_attempts`: an attempt that ended without settling its run. */
export interface AttemptRow {
  attempt: number;
  started_at: number;
  ended_at: number | null;
  outcome: AttemptOutcome;
  step: string | null;
  error: string | null;
}

/** When the run's current attempt was claimed, as the run row knows it (older rows lack it). */
const CLAIMED_AT = "coalesce(attempt_started_at, started_at, created_at)";

/**
 * The SQL of `dk_tasks_attempts`: one row per attempt that ended without settling its run (it
 * parked the run, or the object died under it). Each method is one statement, run inside the
 * transaction of the run-row write it accompanies, and reads the attempt's number and claim time
 * from the run row, so the history never disagrees with the run. The attempt that is running, or
 * that settled the run, is read from the run row itself (see `toAttemptSnapshots`).
 */
export class AttemptStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * Records that the run's current attempt ended by parking the run (`sleep`, `event`, `retry`) or
   * by holding it for a pause (`paused`) at `step`, with a retried step's `error`. Run in the
   * transaction of the write that ends it.
   */
  parked(
    runId: string,
    outcome: "sleep" | "event" | "retry" | "paused",
    step: string | null,
    error: string | null,
    now: number,
  ): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_attempts (run_id, attempt, started_at, ended_at, outcome, step, error)
       SELECT run_id, attempt, ${CLAIMED_AT}, ?, ?, ?, ? FROM dk_tasks_runs
       WHERE run_id = ? AND attempt > 0
       ON CONFLICT (run_id, attempt) DO NOTHING`,
      now,
      outcome,
      step,
      error,
      runId,
    );
  }

  /**
   * Records that the run's current attempt was cut short (the object died or was reset under it,
   * or it gave the run up), when the run is still marked running: before a new claim takes it, or
   * before it is settled without an attempt. Its end time is unknown. Nothing otherwise.
   */
  interrupted(runId: string): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_attempts (run_id, attempt, started_at, outcome)
       SELECT run_id, attempt, ${CLAIMED_AT}, 'interrupted' FROM dk_tasks_runs
       WHERE run_id = ? AND state = 'running' AND attempt > 0
       ON CONFLICT (run_id, attempt) DO NOTHING`,
      runId,
    );
  }

  /**
   * Records the attempt that settled the run as an attempt row (its outcome the run's state, its end
   * the settlement), for a run about to be restarted: the run row will no longer say how it ended.
   * Nothing for a run that is not settled.
   */
  settled(runId: string): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_attempts (run_id, attempt, started_at, ended_at, outcome, step, error)
       SELECT run_id, attempt, ${CLAIMED_AT}, coalesce(settled_at, updated_at), state, NULL, error
       FROM dk_tasks_runs
       WHERE run_id = ? AND attempt > 0 AND state IN ('completed', 'failed', 'cancelled')
       ON CONFLICT (run_id, attempt) DO NOTHING`,
      runId,
    );
  }

  /** A run's ended attempts that did not settle it, in order. */
  list(runId: string): AttemptRow[] {
    return this.#sql
      .exec<AttemptRow & Record<string, SqlStorageValue>>(
        `SELECT attempt, started_at, ended_at, outcome, step, error
         FROM dk_tasks_attempts WHERE run_id = ? ORDER BY attempt`,
        runId,
      )
      .toArray();
  }

  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_attempts WHERE run_id = ?", runId);
  }
}
