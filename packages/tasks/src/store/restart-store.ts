import type { StepRow, TaskRunState } from "./rows";

/** One row of `dk_tasks_restarts`: a restart of a run, and the run as it stood before it. */
export interface RestartRow {
  restart: number;
  from_step: string;
  at: number;
  /** Attempts the run had claimed before the restart. */
  attempt: number;
  /** The run's state before the restart. */
  state: TaskRunState;
}

/** A restart with the journal rows it dropped, in step order. */
export interface RestartRecord extends RestartRow {
  steps: StepRow[];
}

type Row<T> = T & Record<string, SqlStorageValue>;

/**
 * The SQL of `dk_tasks_restarts` and `dk_tasks_dropped_steps`: what each `restart` replaced. Each
 * method runs inside the restart's transaction (or a run's deletion): one statement per table.
 */
export class RestartStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * Records restart `restart` of a run from step `from` (at journal position `fromSeq`): the run's
   * attempt count and state before it, and a copy of every journal row from `fromSeq` on, which the
   * caller then deletes from the journal. Answers how many rows were copied.
   */
  record(
    runId: string,
    restart: number,
    from: string,
    fromSeq: number,
    before: { attempt: number; state: TaskRunState },
    now: number,
  ): number {
    this.#sql.exec(
      `INSERT INTO dk_tasks_restarts (run_id, restart, from_step, at, attempt, state)
       VALUES (?, ?, ?, ?, ?, ?)`,
      runId,
      restart,
      from,
      now,
      before.attempt,
      before.state,
    );
    return this.#sql.exec(
      `INSERT INTO dk_tasks_dropped_steps
         (run_id, restart, name, seq, kind, state, attempt, value, wake_at, event_type, at, ev)
       SELECT run_id, ?, name, seq, kind, state, attempt, value, wake_at, event_type, at, ev
       FROM dk_tasks_steps WHERE run_id = ? AND seq >= ?`,
      restart,
      runId,
      fromSeq,
    ).rowsWritten;
  }

  /** The number the run's next restart takes (1 for its first). */
  next(runId: string): number {
    return this.#sql
      .exec<{ n: number }>(
        "SELECT coalesce(max(restart), 0) + 1 AS n FROM dk_tasks_restarts WHERE run_id = ?",
        runId,
      )
      .one().n;
  }

  /** A run's restarts in order, each with the journal rows it dropped. */
  list(runId: string): RestartRecord[] {
    const records = this.#sql
      .exec<Row<RestartRow>>(
        `SELECT restart, from_step, at, attempt, state FROM dk_tasks_restarts
         WHERE run_id = ? ORDER BY restart`,
        runId,
      )
      .toArray()
      .map((row): RestartRecord => ({ ...row, steps: [] }));
    if (records.length === 0) return records;
    const byNumber = new Map(records.map((record) => [record.restart, record]));
    for (const row of this.#sql.exec<Row<DroppedRow>>(
      `SELECT restart, name, seq, kind, state, attempt, value, wake_at, event_type, at
       FROM dk_tasks_dropped_steps WHERE run_id = ? ORDER BY restart, seq`,
      runId,
    )) {
      const { restart, ...step } = row;
      byNumber.get(restart)?.steps.push({ ...step, next_step: null });
    }
    return records;
  }

  /** Deletes a run's restarts and the rows they kept. */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_restarts WHERE run_id = ?", runId);
    this.#sql.exec("DELETE FROM dk_tasks_dropped_steps WHERE run_id = ?", runId);
  }
}

/** A row of `dk_tasks_dropped_steps`: a journal row as it was, and the restart that dropped it. */
type DroppedRow = Omit<StepRow, "next_step"> & { restart: number };
