import { type JournalLoad, loadJournal, readStepRow } from "./journal-load";
import type { StepRow } from "./rows";

const UPSERT_STEP = `INSERT INTO dk_tasks_steps
    (run_id, name, seq, kind, state, attempt, value, wake_at, event_type, next_step, at)`;
const ON_STEP_CONFLICT = `ON CONFLICT (run_id, name) DO UPDATE SET
    state = excluded.state, attempt = excluded.attempt, value = excluded.value,
    wake_at = excluded.wake_at, event_type = excluded.event_type,
    next_step = excluded.next_step, at = excluded.at`;

function stepParams(runId: string, row: StepRow): SqlStorageValue[] {
  return [
    runId,
    row.name,
    row.seq,
    row.kind,
    row.state,
    row.attempt,
    row.value,
    row.wake_at,
    row.event_type,
    row.next_step,
    row.at,
  ];
}

/**
 * The SQL of `dk_tasks_steps`, the journal: one statement per method (the replay's load is spelled
 * out in `journal-load.ts`). Fenced writes take the attempt's generation and return false when
 * another attempt holds the run.
 */
export class StepStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * The journal of a run for a replay, in one query (see `journal-load.ts`); with `reclaim`, the
   * same query finds the step a dead attempt left in flight.
   */
  loadJournal(runId: string, reclaim: boolean): JournalLoad {
    return loadJournal(this.#sql, runId, reclaim);
  }

  /** Every journal row of a run, whole, for snapshots. Rows come back as arrays (`raw()`). */
  listSteps(runId: string): StepRow[] {
    const rows: StepRow[] = [];
    const cursor = this.#sql
      .exec(
        `SELECT name, seq, kind, state, attempt, value, wake_at, event_type, next_step, at
         FROM dk_tasks_steps WHERE run_id = ?`,
        runId,
      )
      .raw();
    for (const r of cursor) rows.push(readStepRow(r, 0));
    return rows;
  }

  /**
   * One journal row, written only if `generation` still holds the run. One row written. `exists`
   * says whether the row may already be stored (then it is an upsert); the hot path — a completed
   * `do` step journaled for the first time — uses a plain insert with fewer bindings.
   */
  writeStepFenced(runId: string, generation: string, row: StepRow, exists: boolean): boolean {
    if (!exists && row.kind === "do" && row.state === "completed" && row.wake_at === null) {
      return (
        this.#sql.exec(
          `INSERT INTO dk_tasks_steps (run_id, name, seq, kind, state, attempt, value, next_step, at)
           SELECT ?1, ?2, ?3, 'do', 'completed', ?4, ?5, ?6, ?7
           WHERE EXISTS (SELECT 1 FROM dk_tasks_runs WHERE run_id = ?1 AND generation = ?8)`,
          runId,
          row.name,
          row.seq,
          row.attempt,
          row.value,
          row.next_step,
          row.at,
          generation,
        ).rowsWritten > 0
      );
    }
    return (
      this.#sql.exec(
        `${UPSERT_STEP} SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
         WHERE EXISTS (SELECT 1 FROM dk_tasks_runs WHERE run_id = ? AND generation = ?)
         ${ON_STEP_CONFLICT}`,
        ...stepParams(runId, row),
        runId,
        generation,
      ).rowsWritten > 0
    );
  }

  /** One journal row, unfenced: for use inside a transaction whose run write was fenced. */
  writeStep(runId: string, row: StepRow): void {
    this.#sql.exec(
      `${UPSERT_STEP} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${ON_STEP_CONFLICT}`,
      ...stepParams(runId, row),
    );
  }
  /** Completes the waiting event row at `step` with the delivered payload. */
  completeWaiting(runId: string, step: string, payload: string, now: number): void {
    this.#sql.exec(
      `UPDATE dk_tasks_steps SET state = 'completed', value = ?, at = ?
       WHERE run_id = ? AND name = ? AND state = 'waiting'`,
      payload,
      now,
      runId,
      step,
    );
  }

  /** Deletes a run's journal. */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_steps WHERE run_id = ?", runId);
  }
}
