import type { CallRow } from "./rows";

/** Fenced on an attempt that holds the run, as every journal write (see `step-store.ts`). */
const HOLDS = "EXISTS (SELECT 1 FROM dk_tasks_runs WHERE run_id = ?1 AND generation = ?2)";

/**
 * The SQL of `dk_tasks_calls`, the calls recorded through step journals: one statement per method.
 * A run's calls are loaded with its steps, by the journal's one load query (`step-store.ts`).
 * Fenced writes take the attempt's generation and write nothing when another attempt holds the run.
 */
export class CallStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * Inserts one call, only if `generation` still holds the run: one row written, or none (false)
   * when superseded. Throws SQLite's constraint error when the key is already recorded.
   */
  insertFenced(runId: string, generation: string, row: CallRow): boolean {
    return (
      this.#sql.exec(
        `INSERT INTO dk_tasks_calls
           (run_id, journal, call_key, seq, execution_id, module, method, args_digest, outcome, payload, at)
         SELECT ?1, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12 WHERE ${HOLDS}`,
        runId,
        generation,
        row.journal,
        row.key,
        row.seq,
        row.executionId,
        row.module,
        row.method,
        row.argsDigest,
        row.outcome,
        row.payload,
        row.at,
      ).rowsWritten > 0
    );
  }

  /**
   * Replaces the outcome of a pending call (`interrupt` or `unsafe`), only if `generation` still
   * holds the run. One row written, or none (false): superseded, or the call is not pending.
   */
  resolveFenced(
    runId: string,
    generation: string,
    journal: string,
    key: string,
    outcome: string,
    payload: string | null,
    at: number,
  ): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_calls SET outcome = ?5, payload = ?6, at = ?7
         WHERE run_id = ?1 AND journal = ?3 AND call_key = ?4
           AND outcome IN ('interrupt', 'unsafe') AND ${HOLDS}`,
        runId,
        generation,
        journal,
        key,
        outcome,
        payload,
        at,
      ).rowsWritten > 0
    );
  }

  /** Deletes one journal's calls, only if `generation` still holds the run; returns how many. */
  deleteJournalFenced(runId: string, generation: string, journal: string): number {
    return this.#sql.exec(
      `DELETE FROM dk_tasks_calls WHERE run_id = ?1 AND journal = ?3 AND ${HOLDS}`,
      runId,
      generation,
      journal,
    ).rowsWritten;
  }

  /** Every call of a run's step journals, by journal name and recording order (a read by the key's prefix). */
  listRun(runId: string): CallRow[] {
    return this.#sql
      .exec<CallRow & Record<string, SqlStorageValue>>(
        `SELECT journal, call_key AS key, seq, execution_id AS executionId, module, method,
           args_digest AS argsDigest, outcome, payload, at
         FROM dk_tasks_calls WHERE run_id = ? ORDER BY journal, seq`,
        runId,
      )
      .toArray();
  }

  /** Deletes every call journal of a run. */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_calls WHERE run_id = ?", runId);
  }
}
