import { boundedColumn, type TaskTruncatedValue, truncatedOf } from "../truncated";
import type { RunRow, TaskQueueReason, TaskRunState, TaskWaitReason } from "./rows";

const NON_TERMINAL = "('queued', 'pending', 'running', 'waiting', 'paused')";

/** The states an attempt may claim: not settled, not held by an operator. */
const CLAIMABLE = "('pending', 'running', 'waiting')";

/** What holding a run writes: no attempt holds it, no wake is owed, no wait is kept. */
const HOLD = `state = 'paused', generation = NULL, next_at = NULL, wait_reason = NULL,
  wait_step = NULL, wait_event = NULL, pause_requested = 0, updated_at = ?`;

/** Fenced on an attempt that holds the run: the generation matches and the run is running. */
const HELD = "WHERE run_id = ? AND generation = ? AND state = 'running'";
const REFRESH_CLAIM = `UPDATE dk_tasks_runs SET next_at = ?, updated_at = ? ${HELD}`;
const WRITE_STATUS = `UPDATE dk_tasks_runs SET status_message = ?, updated_at = ? ${HELD}`;

/** A run a settle (or the deletion of a completed run) took out of progress: its slot's key. */
export interface SettledRun {
  definition: string;
  /** Its flow key: null unless its definition is flow-controlled. */
  flow_key: string | null;
}

/** Fields a settle writes. */
export interface Settlement {
  state: "completed" | "failed" | "cancelled";
  result?: string | null;
  error?: string | null;
  cancelReason?: string | null;
}

/** The statement of {@link RunStore.recoverOrphans}: it reads only running runs, by their index. */
export const RECOVER_ORPHANS = `UPDATE dk_tasks_runs INDEXED BY dk_tasks_runs_running SET next_at = ?
  WHERE state = 'running' AND next_at > ?`;

/** Filters of {@link RunStore.listRuns}. */
export interface RunFilter {
  definition?: string;
  states?: readonly TaskRunState[];
  limit: number;
  after?: { createdAt: number; runId: string };
  /** Only runs created after this time (epoch ms, exclusive). */
  createdAfter?: number;
  /** Only runs created before this time (epoch ms, exclusive). */
  createdBefore?: number;
  /** False to leave the value columns (`result`, `metadata`) out of the read. */
  values?: boolean;
}

/** Every state a run can be in, in the order counts report them. */
export const RUN_STATES: readonly TaskRunState[] = [
  "queued",
  "pending",
  "running",
  "waiting",
  "paused",
  "completed",
  "failed",
  "cancelled",
];

/** The columns of a listed run: all but its input, which no snapshot of a list shows. */
const LIST_COLUMNS = `run_id, definition, state, NULL AS input, metadata, idempotency_key, retain,
  attempt, generation, next_at, wait_reason, wait_step, wait_event, status_message, result, error,
  cancel_requested, cancel_reason, created_at, started_at, updated_at, settled_at, progress, stalls,
  attempt_started_at, trace, pause_requested, deadline_at, compensable, flow_key, priority,
  queue_seq, queued_for`;

/** {@link LIST_COLUMNS} without the values: a run's facts only. */
const SUMMARY_COLUMNS = LIST_COLUMNS.replace("metadata,", "NULL AS metadata,").replace(
  "result,",
  "NULL AS result,",
);

/** A run row with its values (`input`, `metadata`, `result`) bounded by `?2`, by run id `?1`. */
const GET_BOUNDED = `SELECT ${LIST_COLUMNS.replace("NULL AS input,", `${boundedColumn("input")},`)
  .replace("metadata,", `${boundedColumn("metadata")},`)
  .replace("result,", `${boundedColumn("result")},`)} FROM dk_tasks_runs WHERE run_id = ?1`;

/** The values a bounded read of a run row can leave unread. */
export type RunValueColumn = "input" | "metadata" | "result";

/** A run row from {@link RunStore.getRunBounded}: a value over the bound is null in `row`. */
export interface BoundedRunRead {
  row: RunRow;
  /** The stand-ins of the values that were over the bound. */
  truncated: Partial<Record<RunValueColumn, TaskTruncatedValue>>;
}

/**
 * The SQL of `dk_tasks_runs`: one statement per method. Fenced methods take the attempt's
 * generation and return false when another attempt holds the run.
 */
export class RunStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  getRun(runId: string): RunRow | undefined {
    return this.#sql
      .exec<RunRow & Record<string, SqlStorageValue>>(
        "SELECT * FROM dk_tasks_runs WHERE run_id = ?",
        runId,
      )
      .toArray()[0];
  }

  /**
   * A run's definition and state: the columns stored before its values (input, result), so a
   * reader that checks it per wake reads none of them. Undefined when no such run exists.
   */
  headOf(runId: string): Pick<RunRow, "run_id" | "definition" | "state"> | undefined {
    return this.#sql
      .exec<Pick<RunRow, "run_id" | "definition" | "state"> & Record<string, SqlStorageValue>>(
        "SELECT run_id, definition, state FROM dk_tasks_runs WHERE run_id = ?",
        runId,
      )
      .toArray()[0];
  }

  /** True when the run exists: a read of its key, none of its values. */
  hasRun(runId: string): boolean {
    return (
      this.#sql.exec("SELECT 1 FROM dk_tasks_runs WHERE run_id = ?", runId).toArray().length > 0
    );
  }

  /**
   * The run row with each value whose stored text is over `maxBytes` returned as its size and
   * preview instead ({@link GET_BOUNDED}); undefined when no such run exists.
   */
  getRunBounded(runId: string, maxBytes: number): BoundedRunRead | undefined {
    const found = this.#sql
      .exec<Record<string, SqlStorageValue>>(GET_BOUNDED, runId, maxBytes)
      .toArray()[0];
    if (found === undefined) return undefined;
    const truncated: BoundedRunRead["truncated"] = {};
    for (const column of ["input", "metadata", "result"] as const) {
      const stand = truncatedOf(found[`${column}_bytes`], found[`${column}_preview`]);
      if (stand !== null) truncated[column] = stand;
      delete found[`${column}_bytes`];
      delete found[`${column}_preview`];
    }
    return { row: found as unknown as RunRow, truncated };
  }

  getRunByKey(key: string): RunRow | undefined {
    return this.#sql
      .exec<RunRow & Record<string, SqlStorageValue>>(
        "SELECT * FROM dk_tasks_runs WHERE idempotency_key = ?",
        key,
      )
      .toArray()[0];
  }

  insertRun(row: {
    runId: string;
    definition: string;
    input: string;
    metadata: string | null;
    key: string | null;
    retain: boolean;
    trace: string | null;
    /** True to accept the run held (`paused`, no wake) until `resume`. */
    paused?: boolean;
    /** When the run fails with `tasks/run-timeout`, or null. */
    deadlineAt?: number | null;
    /** Its flow key, for a flow-controlled definition's run; null (the default) otherwise. */
    flowKey?: string | null;
    priority?: number;
    /** Accepts the run `queued`: why, its place in its key's queue, and its wake (a debounce's). */
    queue?: { reason: TaskQueueReason; seq: number | null; wakeAt: number | null } | null;
    now: number;
  }): void {
    const queue = row.queue ?? null;
    const state = row.paused === true ? "paused" : queue !== null ? "queued" : "pending";
    this.#sql.exec(
      `INSERT INTO dk_tasks_runs
        (run_id, definition, state, input, metadata, idempotency_key, retain, trace, next_at,
         deadline_at, created_at, updated_at, flow_key, priority, queue_seq, queued_for)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.runId,
      row.definition,
      state,
      row.input,
      row.metadata,
      row.key,
      row.retain ? 1 : 0,
      row.trace,
      state === "pending" ? row.now : state === "queued" ? (queue?.wakeAt ?? null) : null,
      row.deadlineAt ?? null,
      row.now,
      row.now,
      row.flowKey ?? null,
      row.priority ?? 0,
      queue?.seq ?? null,
      queue?.reason ?? null,
    );
  }

  /** Lets a queued run take its slot: pending, due at `now`. False when it was not queued. */
  dequeue(runId: string, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'pending', next_at = ?, queued_for = NULL, queue_seq = NULL,
           updated_at = ?
         WHERE run_id = ? AND state = 'queued'`,
        now,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /** Queues a pending run again (a restart found its key's slots taken), at `seq`, with no wake. */
  queueAgain(runId: string, seq: number, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'queued', queued_for = 'concurrency', queue_seq = ?,
           next_at = NULL, updated_at = ?
         WHERE run_id = ? AND state = 'pending'`,
        seq,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /** True when any run is queued: one probe of the state index. */
  hasQueued(): boolean {
    return (
      this.#sql
        .exec(
          "SELECT 1 FROM dk_tasks_runs INDEXED BY dk_tasks_runs_by_state WHERE state = 'queued' LIMIT 1",
        )
        .toArray().length > 0
    );
  }

  /** Ids of a definition's queued runs, oldest first (at most `limit`). */
  queuedOf(definition: string, limit: number): string[] {
    return this.#sql
      .exec<{ run_id: string }>(
        `SELECT run_id FROM dk_tasks_runs INDEXED BY dk_tasks_runs_by_definition
         WHERE definition = ? AND state = 'queued' ORDER BY created_at, run_id LIMIT ?`,
        definition,
        limit,
      )
      .toArray()
      .map((row) => row.run_id);
  }

  /** Puts a queued run (a debounce that ended) in its key's queue for a slot, at `seq`, with no wake. */
  requeue(runId: string, reason: TaskQueueReason, seq: number, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET queued_for = ?, queue_seq = ?, next_at = NULL, updated_at = ?
         WHERE run_id = ? AND state = 'queued'`,
        reason,
        seq,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /** A debounced run takes a later call's input (and metadata) and its new wake. */
  regather(
    runId: string,
    input: string,
    metadata: string | null,
    wakeAt: number,
    now: number,
  ): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET input = ?, metadata = coalesce(?, metadata), next_at = ?, updated_at = ?
         WHERE run_id = ? AND state = 'queued' AND queued_for = 'debounce'`,
        input,
        metadata,
        wakeAt,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /**
   * Claims a run for a new attempt: compare-and-set on the generation seen when the run was read,
   * so two claims of the same observed state cannot both win.
   */
  claim(
    runId: string,
    seen: string | null,
    generation: string,
    attempt: number,
    deadline: number,
    breaker: { progress: number; stalls: number },
    now: number,
    cancelling = false,
  ): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'running', generation = ?, attempt = ?, next_at = ?,
           wait_reason = NULL, wait_step = NULL, wait_event = NULL, progress = ?, stalls = ?,
           started_at = coalesce(started_at, ?), attempt_started_at = ?, updated_at = ?
         WHERE run_id = ? AND generation IS ? AND state IN ${CLAIMABLE} AND cancel_requested = ?
           AND pause_requested = 0`,
        generation,
        attempt,
        deadline,
        breaker.progress,
        breaker.stalls,
        now,
        now,
        now,
        runId,
        seen,
        cancelling ? 1 : 0,
      ).rowsWritten > 0
    );
  }
  /** Pushes a live attempt's claim deadline forward (fenced). */
  refreshClaim(runId: string, generation: string, deadline: number, now: number): boolean {
    return this.#updateHeld(REFRESH_CLAIM, deadline, runId, generation, now);
  }

  /**
   * Parks a running run (fenced; refused once a cancel was requested, unless `cancelling`: an
   * attempt undoing the run's steps for its cancel parks on a compensation's retry).
   */
  park(
    runId: string,
    generation: string,
    reason: TaskWaitReason,
    nextAt: number | null,
    waitStep: string | null,
    waitEvent: string | null,
    now: number,
    cancelling = false,
  ): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'waiting', wait_reason = ?, wait_step = ?, wait_event = ?,
           next_at = ?, generation = NULL, updated_at = ?
         WHERE run_id = ? AND generation = ? AND state = 'running' AND cancel_requested <= ?`,
        reason,
        waitStep,
        waitEvent,
        nextAt,
        now,
        runId,
        generation,
        cancelling ? 1 : 0,
      ).rowsWritten > 0
    );
  }

  /**
   * Marks a run as having a completed step with a compensation (once: nothing is written when it
   * already is).
   */
  markCompensable(runId: string): void {
    this.#sql.exec(
      "UPDATE dk_tasks_runs SET compensable = 1 WHERE run_id = ? AND compensable = 0",
      runId,
    );
  }

  /**
   * A cancel of a run no live attempt holds that has compensations to run: the cancel is recorded
   * and the run is due at `now` (a parked or held run pending again, its wait forgotten), so that
   * an attempt replays it, undoes its completed steps and settles it cancelled.
   */
  requestCancelDue(runId: string, reason: string | null, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET cancel_requested = 1, cancel_reason = ?, pause_requested = 0,
           state = CASE WHEN state IN ('waiting', 'paused') THEN 'pending' ELSE state END,
           wait_reason = NULL, wait_step = NULL, wait_event = NULL, next_at = ?, updated_at = ?
         WHERE run_id = ? AND state IN ${NON_TERMINAL}`,
        reason,
        now,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /**
   * Settles a run. Fenced on `generation` when one is given (an attempt settling its own run);
   * otherwise it settles any non-terminal run (a parked run cancelled, a run failed before a claim).
   */
  settle(
    runId: string,
    generation: string | null,
    settlement: Settlement,
    now: number,
  ): SettledRun | null {
    const fence =
      generation === null ? `state IN ${NON_TERMINAL}` : "generation = ? AND state = 'running'";
    const params: SqlStorageValue[] = [
      settlement.state,
      settlement.result ?? null,
      settlement.error ?? null,
      settlement.cancelReason ?? null,
      now,
      now,
      runId,
    ];
    if (generation !== null) params.push(generation);
    return (
      this.#sql
        .exec<SettledRun & Record<string, SqlStorageValue>>(
          `UPDATE dk_tasks_runs SET state = ?, result = ?, error = ?,
           cancel_reason = coalesce(?, cancel_reason), generation = NULL, next_at = NULL,
           wait_reason = NULL, wait_step = NULL, wait_event = NULL, queued_for = NULL,
           queue_seq = NULL, settled_at = ?, updated_at = ?
         WHERE run_id = ? AND ${fence} RETURNING definition, flow_key`,
          ...params,
        )
        .toArray()[0] ?? null
    );
  }
  /** Deletes the run row of an attempt that holds it (fenced); the caller deletes its data. */
  deleteHeld(runId: string, generation: string): SettledRun | null {
    return (
      this.#sql
        .exec<SettledRun & Record<string, SqlStorageValue>>(
          `DELETE FROM dk_tasks_runs WHERE run_id = ? AND generation = ? AND state = 'running'
           RETURNING definition, flow_key`,
          runId,
          generation,
        )
        .toArray()[0] ?? null
    );
  }

  /** Deletes one terminal run row; the caller deletes its data. */
  deleteTerminal(runId: string): boolean {
    return (
      this.#sql.exec(
        "DELETE FROM dk_tasks_runs WHERE run_id = ? AND state IN ('completed', 'failed', 'cancelled')",
        runId,
      ).rowsWritten > 0
    );
  }

  /** Records a cancel request on a non-terminal run. */
  requestCancel(runId: string, reason: string | null, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET cancel_requested = 1, cancel_reason = ?, updated_at = ?
         WHERE run_id = ? AND state IN ${NON_TERMINAL}`,
        reason,
        now,
        runId,
      ).rowsWritten > 0
    );
  }
  /**
   * Holds a run no live attempt holds (pending, waiting, or running under an attempt that is gone):
   * it takes no attempt and needs no wake until {@link resume}. Its journal stays; a wait it was
   * parked on is found again by the replay after the resume. Any generation is cleared, which
   * fences out whatever a gone attempt could still write.
   */
  pause(runId: string, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET ${HOLD} WHERE run_id = ? AND state IN ${CLAIMABLE}`,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /** Holds the run its attempt holds, at a step boundary (fenced; refused once a cancel was requested). */
  pauseHeld(runId: string, generation: string, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET ${HOLD}
         WHERE run_id = ? AND generation = ? AND state = 'running' AND cancel_requested = 0`,
        now,
        runId,
        generation,
      ).rowsWritten > 0
    );
  }

  /** Asks the live attempt of a running run to hold it at its next step boundary. */
  requestPause(runId: string, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET pause_requested = 1, updated_at = ?
         WHERE run_id = ? AND state = 'running' AND cancel_requested = 0`,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /**
   * Lets a held run go on: a paused run becomes pending and due at `now` (its next attempt replays
   * the journal), and a pause not yet taken by a running run is withdrawn. False when neither.
   */
  resume(runId: string, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs
         SET state = CASE state WHEN 'paused' THEN 'pending' ELSE state END,
           next_at = CASE state WHEN 'paused' THEN ? ELSE next_at END,
           pause_requested = 0, updated_at = ?
         WHERE run_id = ? AND (state = 'paused' OR (state = 'running' AND pause_requested = 1))`,
        now,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /**
   * Makes a run pending and due at `now` again, as a restart leaves it: no attempt holds it, and
   * its settlement, wait, cancel and pause are forgotten (its attempt count is kept), and its
   * deadline is `deadlineAt`. The caller has checked that no live attempt holds it.
   */
  restart(runId: string, deadlineAt: number | null, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'pending', next_at = ?, generation = NULL,
           wait_reason = NULL, wait_step = NULL, wait_event = NULL, status_message = NULL,
           result = NULL, error = NULL, cancel_requested = 0, cancel_reason = NULL,
           pause_requested = 0, settled_at = NULL, progress = 0, stalls = 0, deadline_at = ?,
           updated_at = ?
         WHERE run_id = ?`,
        now,
        deadlineAt,
        now,
        runId,
      ).rowsWritten > 0
    );
  }

  /** Writes the progress message of a live attempt (fenced). */
  writeStatus(runId: string, generation: string, message: string, now: number): boolean {
    return this.#updateHeld(WRITE_STATUS, message, runId, generation, now);
  }

  /** Makes a run parked on an event at `step` due now; false if it stopped waiting there. */
  wakeForEvent(runId: string, step: string, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET next_at = ?, updated_at = ?
         WHERE run_id = ? AND state = 'waiting' AND wait_reason = 'event' AND wait_step = ?`,
        now,
        now,
        runId,
        step,
      ).rowsWritten > 0
    );
  }

  /**
   * Makes every `running` run due at `now` (its claim deadline brought forward): called by a new
   * instance of the object, in which no attempt can be alive yet, so every claim on disk belongs
   * to an instance that is gone. Answers how many runs it made due. Reads only running runs
   * (`dk_tasks_runs_running`).
   */
  recoverOrphans(now: number): number {
    return this.#sql.exec(RECOVER_ORPHANS, now, now).rowsWritten;
  }

  /** Ids of runs whose wake is due, earliest first. */
  dueRuns(now: number, limit: number): string[] {
    return this.#sql
      .exec<{ run_id: string }>(
        `SELECT run_id FROM dk_tasks_runs WHERE next_at IS NOT NULL AND next_at <= ?
         ORDER BY next_at LIMIT ?`,
        now,
        limit,
      )
      .toArray()
      .map((row) => row.run_id);
  }

  /** The earliest wake of any run, or null. */
  nextWakeAt(): number | null {
    const row = this.#sql
      .exec<{ at: number | null }>(
        "SELECT min(next_at) AS at FROM dk_tasks_runs WHERE next_at IS NOT NULL",
      )
      .toArray()[0];
    return row?.at ?? null;
  }

  /**
   * The earliest wake of a run not in `skip` (the runs whose attempts are alive in this isolate),
   * or null. Reads at most `skip.size + 1` rows of the `next_at` order.
   */
  nextWakeAtExcept(skip: ReadonlySet<string> | ReadonlyMap<string, unknown>): number | null {
    for (const row of this.#sql.exec<{ run_id: string; next_at: number }>(
      "SELECT run_id, next_at FROM dk_tasks_runs WHERE next_at IS NOT NULL ORDER BY next_at LIMIT ?",
      skip.size + 1,
    )) {
      if (!skip.has(row.run_id)) return row.next_at;
    }
    return null;
  }

  /**
   * Runs, newest first, reading only the rows it answers (and one more per range it walks): no
   * filter walks `by_created`; a state filter walks each state's range of `by_state`, a definition
   * filter each state's range of `by_definition`, merged newest first here. A filter that matches
   * nothing reads no row. `values: false` leaves the value columns (`result`, `metadata`) out of the
   * read; `input` is never read here.
   */
  listRuns(filter: RunFilter): RunRow[] {
    const columns = filter.values === false ? SUMMARY_COLUMNS : LIST_COLUMNS;
    const range: string[] = [];
    const params: SqlStorageValue[] = [];
    if (filter.after) {
      // A row value compares as the index orders, so the page starts at a seek, not a walk.
      range.push("(created_at, run_id) < (?, ?)");
      params.push(filter.after.createdAt, filter.after.runId);
    }
    if (filter.createdAfter !== undefined) {
      range.push("created_at > ?");
      params.push(filter.createdAfter);
    }
    if (filter.createdBefore !== undefined) {
      range.push("created_at < ?");
      params.push(filter.createdBefore);
    }
    const order = `ORDER BY created_at DESC, run_id DESC LIMIT ?`;
    if (
      filter.definition === undefined &&
      (filter.states === undefined || filter.states.length === 0)
    ) {
      const clause = range.length > 0 ? `WHERE ${range.join(" AND ")}` : "";
      return this.#sql
        .exec<RunRow & Record<string, SqlStorageValue>>(
          `SELECT ${columns} FROM dk_tasks_runs INDEXED BY dk_tasks_runs_by_created ${clause} ${order}`,
          ...params,
          filter.limit,
        )
        .toArray();
    }
    const states = [
      ...new Set(filter.states && filter.states.length > 0 ? filter.states : RUN_STATES),
    ];
    const index =
      filter.definition === undefined ? "dk_tasks_runs_by_state" : "dk_tasks_runs_by_definition";
    const where = [
      "state = ?",
      ...(filter.definition === undefined ? [] : ["definition = ?"]),
      ...range,
    ];
    const query = `SELECT ${columns} FROM dk_tasks_runs INDEXED BY ${index} WHERE ${where.join(" AND ")} ${order}`;
    const rows: RunRow[] = [];
    for (const state of states) {
      const head: SqlStorageValue[] =
        filter.definition === undefined ? [state] : [state, filter.definition];
      rows.push(
        ...this.#sql
          .exec<RunRow & Record<string, SqlStorageValue>>(query, ...head, ...params, filter.limit)
          .toArray(),
      );
    }
    // Each state's rows are newest first; merged, the newest `limit` of them are the page.
    rows.sort((a, b) =>
      a.created_at !== b.created_at
        ? b.created_at - a.created_at
        : a.run_id < b.run_id
          ? 1
          : a.run_id > b.run_id
            ? -1
            : 0,
    );
    return rows.slice(0, filter.limit);
  }

  /**
   * How many runs are in each state, each counted up to `max + 1` entries of `by_state` (no run row
   * is read): a count above `max` is reported as `max`, capped.
   */
  countByState(max: number): { byState: Record<TaskRunState, number>; capped: TaskRunState[] } {
    const byState = {} as Record<TaskRunState, number>;
    const capped: TaskRunState[] = [];
    for (const state of RUN_STATES) {
      const n =
        this.#sql
          .exec<{ n: number }>(
            `SELECT count(*) AS n FROM (SELECT 1 FROM dk_tasks_runs INDEXED BY dk_tasks_runs_by_state
               WHERE state = ? LIMIT ?)`,
            state,
            max + 1,
          )
          .toArray()[0]?.n ?? 0;
      byState[state] = Math.min(n, max);
      if (n > max) capped.push(state);
    }
    return { byState, capped };
  }

  /** Terminal runs matching a delete request, oldest settled first. */
  settledRuns(
    states: readonly TaskRunState[],
    settledBefore: number | null,
    limit: number,
  ): Array<{ run_id: string; definition: string }> {
    const params: SqlStorageValue[] = [...states];
    let query = `SELECT run_id, definition FROM dk_tasks_runs
      WHERE state IN (${states.map(() => "?").join(", ")})`;
    if (settledBefore !== null) {
      query += " AND settled_at < ?";
      params.push(settledBefore);
    }
    query += " ORDER BY settled_at, run_id LIMIT ?";
    params.push(limit);
    return this.#sql.exec<{ run_id: string; definition: string }>(query, ...params).toArray();
  }

  /** One fenced `SET <column> = ?, updated_at = ?` of `query` on a run the attempt holds. */
  #updateHeld(
    query: string,
    value: SqlStorageValue,
    runId: string,
    generation: string,
    now: number,
  ): boolean {
    return this.#sql.exec(query, value, now, runId, generation).rowsWritten > 0;
  }
}
