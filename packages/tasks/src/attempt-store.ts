/** How an attempt ended, as stored in `dk_tasks_attempts.outcome` (`NULL` while it runs). */
export type AttemptOutcome =
  | "completed"
  | "failed"
  | "cancelled"
  | "sleep"
  | "event"
  | "retry"
  | "interrupted";

/** One row of `dk_tasks_attempts`. */
export interface AttemptRow {
  attempt: number;
  started_at: number;
  ended_at: number | null;
  outcome: AttemptOutcome | null;
  step: string | null;
  error: string | null;
}

/**
 * The SQL of `dk_tasks_attempts`: one row per attempt of a run, for its timeline. Each method is
 * one statement, run inside the transaction of the run-row write it accompanies (the claim that
 * starts an attempt, the park or settle that ends it), so the history never disagrees with the run.
 */
export class AttemptStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** Records the start of attempt `attempt` (with its claim). */
  begin(runId: string, attempt: number, now: number): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_attempts (run_id, attempt, started_at) VALUES (?, ?, ?)
       ON CONFLICT (run_id, attempt) DO NOTHING`,
      runId,
      attempt,
      now,
    );
  }

  /**
   * Marks attempt `attempt` as cut short (the object died or was reset under it, or it gave the run
   * up), when the claim of the next one finds the run still running. Its end time is unknown.
   */
  interrupted(runId: string, attempt: number): void {
    this.#sql.exec(
      `UPDATE dk_tasks_attempts SET outcome = 'interrupted'
       WHERE run_id = ? AND attempt = ? AND outcome IS NULL`,
      runId,
      attempt,
    );
  }

  /**
   * Ends the run's current attempt (the run row's `attempt`) with `outcome`; `step` is the step it
   * parked at, `error` a retried step's error. Nothing for an attempt already ended.
   */
  end(
    runId: string,
    outcome: AttemptOutcome,
    step: string | null,
    error: string | null,
    now: number,
  ): void {
    this.#sql.exec(
      `UPDATE dk_tasks_attempts SET ended_at = ?, outcome = ?, step = ?, error = ?
       WHERE run_id = ? AND outcome IS NULL
         AND attempt = (SELECT attempt FROM dk_tasks_runs WHERE run_id = ?)`,
      now,
      outcome,
      step,
      error,
      runId,
      runId,
    );
  }

  /** A run's attempts, in order. */
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
