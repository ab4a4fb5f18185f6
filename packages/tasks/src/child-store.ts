import type { ObjectAddress } from "./child-messages";

/** A child's state as its parent knows it. */
export type ChildState = "running" | "completed" | "failed" | "cancelled";

/** One row of `dk_tasks_children`: a child run a parent run started, as the parent knows it. */
export interface ChildRow {
  child_run_id: string;
  step: string;
  state: ChildState;
  result: string | null;
  error: string | null;
}

/** A running child of a run, with where it lives (to cancel it). */
export interface RunningChild {
  child_run_id: string;
  step: string;
  target: string;
}

/**
 * The SQL of a parent's side of child runs: `dk_tasks_children` (each child a run started: written
 * at the start, settled once by the child's notification, whichever comes first) and
 * `dk_tasks_child_waits` (what a parked `awaitChildren` step waits for, as a countdown: a
 * notification costs one row update however many children the step awaits). Each method is one
 * statement.
 */
export class ChildStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** Notes a child `startChild` started (nothing when its settlement already arrived). */
  started(parentRunId: string, childRunId: string, step: string, target: ObjectAddress): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_children (parent_run_id, child_run_id, step, target, state)
       VALUES (?, ?, ?, ?, 'running') ON CONFLICT (parent_run_id, child_run_id) DO NOTHING`,
      parentRunId,
      childRunId,
      step,
      JSON.stringify(target),
    );
  }

  /**
   * Applies a child's settlement once: true when this call settled the row (a new child row, or a
   * running one); false for a duplicate. Answers the wait the child counts toward, if any.
   */
  settle(
    parentRunId: string,
    childRunId: string,
    step: string,
    state: Exclude<ChildState, "running">,
    result: string | null,
    error: string | null,
    now: number,
  ): { applied: boolean; waitStep: string | null } {
    const row = this.#sql
      .exec<{ wait_step: string | null }>(
        `INSERT INTO dk_tasks_children
           (parent_run_id, child_run_id, step, target, state, result, error, settled_at)
         VALUES (?, ?, ?, 'null', ?, ?, ?, ?)
         ON CONFLICT (parent_run_id, child_run_id) DO UPDATE SET
           state = excluded.state, result = excluded.result, error = excluded.error,
           settled_at = excluded.settled_at
         WHERE dk_tasks_children.state = 'running'
         RETURNING wait_step`,
        parentRunId,
        childRunId,
        step,
        state,
        result,
        error,
        now,
      )
      .toArray()[0];
    return row === undefined
      ? { applied: false, waitStep: null }
      : { applied: true, waitStep: row.wait_step };
  }

  /** The children of a run among `ids`, as rows by child run id. */
  rows(parentRunId: string, ids: readonly string[]): Map<string, ChildRow> {
    const rows = new Map<string, ChildRow>();
    const cursor = this.#sql.exec<ChildRow & Record<string, SqlStorageValue>>(
      `SELECT child_run_id, step, state, result, error FROM dk_tasks_children
       WHERE parent_run_id = ? AND child_run_id IN (SELECT value FROM json_each(?))`,
      parentRunId,
      JSON.stringify(ids),
    );
    for (const row of cursor) rows.set(row.child_run_id, row);
    return rows;
  }

  /** Every child of a run, by step name. */
  list(
    parentRunId: string,
  ): Array<RunningChild & { state: ChildState; settled_at: number | null }> {
    return this.#sql
      .exec<
        RunningChild & { state: ChildState; settled_at: number | null } & Record<
            string,
            SqlStorageValue
          >
      >(
        `SELECT child_run_id, step, target, state, settled_at FROM dk_tasks_children
         WHERE parent_run_id = ? ORDER BY step`,
        parentRunId,
      )
      .toArray();
  }

  /** The children of a run still running, with their addresses. */
  running(parentRunId: string): RunningChild[] {
    return this.#sql
      .exec<RunningChild & Record<string, SqlStorageValue>>(
        `SELECT child_run_id, step, target FROM dk_tasks_children
         WHERE parent_run_id = ? AND state = 'running'`,
        parentRunId,
      )
      .toArray();
  }

  /**
   * Registers what step `step` of a run waits for: `children` (its list, by child run id), of which
   * `remaining` more must settle; each of them not settled yet counts toward this wait.
   */
  registerWait(runId: string, step: string, children: readonly string[], remaining: number): void {
    const list = JSON.stringify(children);
    this.#sql.exec(
      `INSERT INTO dk_tasks_child_waits (run_id, step, children, remaining) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id, step) DO UPDATE SET children = excluded.children, remaining = excluded.remaining`,
      runId,
      step,
      list,
      remaining,
    );
    this.#sql.exec(
      `UPDATE dk_tasks_children SET wait_step = ?
       WHERE parent_run_id = ? AND state = 'running' AND child_run_id IN (SELECT value FROM json_each(?))`,
      step,
      runId,
      list,
    );
  }

  /** One more child of the wait settled: the children still to settle before it is answered, or null when there is no such wait. */
  countDown(runId: string, step: string): number | null {
    const row = this.#sql
      .exec<{ remaining: number }>(
        `UPDATE dk_tasks_child_waits SET remaining = remaining - 1 WHERE run_id = ? AND step = ?
         RETURNING remaining`,
        runId,
        step,
      )
      .toArray()[0];
    return row === undefined ? null : row.remaining;
  }

  /** Forgets the wait of a step that was answered. */
  deleteWait(runId: string, step: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_child_waits WHERE run_id = ? AND step = ?", runId, step);
  }

  /** Deletes a run's children and waits (with the run's other records). */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_children WHERE parent_run_id = ?", runId);
    this.#sql.exec("DELETE FROM dk_tasks_child_waits WHERE run_id = ?", runId);
  }
}
