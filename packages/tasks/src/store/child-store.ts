import type { Exchange, ObjectAddress } from "../children/protocol";

/** A child's state as its parent knows it: `starting` from the intent until the start is answered. */
export type ChildState = "starting" | "running" | "completed" | "failed" | "cancelled";

/** A settled child state. */
export type ChildEnd = "completed" | "failed" | "cancelled";

/** One row of `dk_tasks_children`: a child run a parent run started, as the parent knows it. */
export interface ChildRow {
  step: string;
  /** The child's position among those its step started (0 for `startChild`). */
  idx: number;
  seq: number;
  key: string;
  secret: string;
  /** The child's object, as JSON of its {@link ObjectAddress}. */
  target: string;
  definition: string;
  child_run_id: string | null;
  state: ChildState;
  result: string | null;
  error: string | null;
  settled_at: number | null;
}

type Row<T> = T & Record<string, SqlStorageValue>;

const COLUMNS =
  "step, idx, seq, key, secret, target, definition, child_run_id, state, result, error, settled_at";

/** One child a step is about to start, as its intent records it. */
export interface ChildIntent {
  exchange: Exchange;
  target: ObjectAddress;
  definition: string;
}

/**
 * The SQL of a parent's side of child runs: `dk_tasks_children` (each child a run started, keyed by
 * the run and its step: written as an intent before the start leaves, with the exchange's key and
 * secret; noted running when the start is answered; settled once by the child's settlement or by
 * the parent's own settlement) and `dk_tasks_child_waits` (what a parked `awaitChildren` step waits
 * for, as a countdown: a settlement costs one row update however many children the step awaits).
 * Each method is one statement unless it says otherwise.
 */
export class ChildStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * Records the intent to start the children of step `step` of a run (at positions 0, 1, …),
   * fenced on the attempt `generation` holding the run: the rows that were there, or the ones
   * written now, by position. Empty when the fence lost (nothing written). Several statements: call
   * it inside a transaction.
   */
  intend(
    runId: string,
    generation: string,
    step: string,
    intents: readonly ChildIntent[],
    now: number,
  ): ChildRow[] {
    const held = this.#sql
      .exec(
        "SELECT 1 FROM dk_tasks_runs WHERE run_id = ? AND generation = ? AND state = 'running'",
        runId,
        generation,
      )
      .toArray();
    if (held.length === 0) return [];
    const base = this.#sql
      .exec<{ seq: number }>(
        "SELECT coalesce(max(seq), 0) AS seq FROM dk_tasks_children WHERE parent_run_id = ?",
        runId,
      )
      .one().seq;
    // One statement for every intent: the rows travel as one JSON array of
    // [key, secret, target, definition], inserted at positions 0, 1, … in array order.
    this.#sql.exec(
      `INSERT INTO dk_tasks_children
         (parent_run_id, step, idx, seq, key, secret, target, definition, state, created_at)
       SELECT ?1, ?2, intent.key, ?3 + intent.key + 1, intent.value ->> 0, intent.value ->> 1,
              intent.value ->> 2, intent.value ->> 3, 'starting', ?4
       FROM json_each(?5) AS intent WHERE true
       ON CONFLICT (parent_run_id, step, idx) DO NOTHING`,
      runId,
      step,
      base,
      now,
      JSON.stringify(
        intents.map((intent) => [
          intent.exchange.key,
          intent.exchange.secret,
          JSON.stringify(intent.target),
          intent.definition,
        ]),
      ),
    );
    return this.ofStep(runId, step);
  }

  /** The children step `step` of a run started, by position. */
  ofStep(runId: string, step: string): ChildRow[] {
    return this.#sql
      .exec<Row<ChildRow>>(
        `SELECT ${COLUMNS} FROM dk_tasks_children WHERE parent_run_id = ? AND step = ? ORDER BY idx`,
        runId,
        step,
      )
      .toArray();
  }

  /** The child at position `idx` of step `step` of a run, or undefined. */
  get(runId: string, step: string, idx: number): ChildRow | undefined {
    return this.#sql
      .exec<Row<ChildRow>>(
        `SELECT ${COLUMNS} FROM dk_tasks_children WHERE parent_run_id = ? AND step = ? AND idx = ?`,
        runId,
        step,
        idx,
      )
      .toArray()[0];
  }

  /**
   * Notes the child runs starts were answered with (a `starting` child becomes `running`), each
   * `[idx, key, childRunId]` of step `step`: one keyed update per answer (a join with the answers'
   * JSON would let SQLite walk the step's rows once per answer). Call it inside a transaction.
   */
  started(runId: string, step: string, answers: ReadonlyArray<[number, string, string]>): void {
    for (const [idx, key, childRunId] of answers) {
      this.#sql.exec(
        `UPDATE dk_tasks_children
         SET child_run_id = ?, state = CASE state WHEN 'starting' THEN 'running' ELSE state END
         WHERE parent_run_id = ? AND step = ? AND idx = ? AND key = ? AND child_run_id IS NULL`,
        childRunId,
        runId,
        step,
        idx,
        key,
      );
    }
  }

  /**
   * Applies a child's settlement once: true when this call settled the row (a starting or running
   * one); false for a duplicate. Answers the wait the child counts toward, if any.
   */
  settle(
    runId: string,
    step: string,
    idx: number,
    childRunId: string,
    state: ChildEnd,
    result: string | null,
    error: string | null,
    now: number,
  ): { applied: boolean; waitStep: string | null } {
    const row = this.#sql
      .exec<{ wait_step: string | null }>(
        `UPDATE dk_tasks_children
         SET child_run_id = ?, state = ?, result = ?, error = ?, settled_at = ?
         WHERE parent_run_id = ? AND step = ? AND idx = ? AND state IN ('starting', 'running')
         RETURNING wait_step`,
        childRunId,
        state,
        result,
        error,
        now,
        runId,
        step,
        idx,
      )
      .toArray()[0];
    return row === undefined
      ? { applied: false, waitStep: null }
      : { applied: true, waitStep: row.wait_step };
  }

  /** The children of a run among `ids` (child run ids), as rows by child run id. */
  rows(runId: string, ids: readonly string[]): Map<string, ChildRow> {
    const rows = new Map<string, ChildRow>();
    const cursor = this.#sql.exec<Row<ChildRow>>(
      `SELECT ${COLUMNS} FROM dk_tasks_children
       WHERE parent_run_id = ? AND child_run_id IN (SELECT value FROM json_each(?))`,
      runId,
      JSON.stringify(ids),
    );
    for (const row of cursor) rows.set(row.child_run_id as string, row);
    return rows;
  }

  /** Every child of a run, in start order. */
  list(runId: string): ChildRow[] {
    return this.#sql
      .exec<Row<ChildRow>>(
        `SELECT ${COLUMNS} FROM dk_tasks_children WHERE parent_run_id = ? ORDER BY seq`,
        runId,
      )
      .toArray();
  }

  /**
   * Settles as cancelled, with `error`, every child of a run still starting or running (its parent
   * settled: it owes each of them a cancel), and answers them.
   */
  cancelLive(runId: string, error: string, now: number): ChildRow[] {
    return this.#sql
      .exec<Row<ChildRow>>(
        `UPDATE dk_tasks_children SET state = 'cancelled', error = ?, settled_at = ?
         WHERE parent_run_id = ? AND state IN ('starting', 'running')
         RETURNING ${COLUMNS}`,
        error,
        now,
        runId,
      )
      .toArray();
  }

  /**
   * Registers what step `step` of a run waits for: `children` (its list, by child run id), of which
   * `remaining` more must settle; each of them not settled yet counts toward this wait. Two
   * statements: call it inside the transaction that parks the run.
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
       WHERE parent_run_id = ? AND state IN ('starting', 'running')
         AND child_run_id IN (SELECT value FROM json_each(?))`,
      step,
      runId,
      list,
    );
  }

  /** `by` more children of the wait settled: the children still to settle before it is answered, or null when there is no such wait. */
  countDown(runId: string, step: string, by = 1): number | null {
    const row = this.#sql
      .exec<{ remaining: number }>(
        `UPDATE dk_tasks_child_waits SET remaining = remaining - ? WHERE run_id = ? AND step = ?
         RETURNING remaining`,
        by,
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

  /** How many child runs the run's journal rows from position `fromSeq` on started. */
  startedFrom(runId: string, fromSeq: number): number {
    return this.#sql
      .exec<{ n: number }>(
        `SELECT count(*) AS n FROM dk_tasks_children WHERE parent_run_id = ?1
           AND step IN (SELECT name FROM dk_tasks_steps WHERE run_id = ?1 AND seq >= ?2)`,
        runId,
        fromSeq,
      )
      .one().n;
  }

  /** Forgets the waits of the run's journal rows from position `fromSeq` on (a restart drops them). */
  deleteWaitsFrom(runId: string, fromSeq: number): void {
    this.#sql.exec(
      `DELETE FROM dk_tasks_child_waits WHERE run_id = ?1
         AND step IN (SELECT name FROM dk_tasks_steps WHERE run_id = ?1 AND seq >= ?2)`,
      runId,
      fromSeq,
    );
  }

  /** Deletes a run's children and waits (with the run's other records). */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_children WHERE parent_run_id = ?", runId);
    this.#sql.exec("DELETE FROM dk_tasks_child_waits WHERE run_id = ?", runId);
  }
}
