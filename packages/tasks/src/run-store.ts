import type { RunRow, TaskRunState, TaskWaitReason } from "./rows";

const NON_TERMINAL = "('pending', 'running', 'waiting')";

/** Fenced on an attempt that holds the run: the generation matches and the run is running. */
const HELD = "WHERE run_id = ? AND generation = ? AND state = 'running'";
const REFRESH_CLAIM = `UPDATE dk_tasks_runs SET next_at = ?, updated_at = ? ${HELD}`;
const WRITE_STATUS = `UPDATE dk_tasks_runs SET status_message = ?, updated_at = ? ${HELD}`;

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
    now: number;
  }): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_runs
        (run_id, definition, state, input, metadata, idempotency_key, retain, trace, next_at, created_at, updated_at)
       VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.runId,
      row.definition,
      row.input,
      row.metadata,
      row.key,
      row.retain ? 1 : 0,
      row.trace,
      row.now,
      row.now,
      row.now,
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
  ): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'running', generation = ?, attempt = ?, next_at = ?,
           wait_reason = NULL, wait_step = NULL, wait_event = NULL, progress = ?, stalls = ?,
           started_at = coalesce(started_at, ?), attempt_started_at = ?, updated_at = ?
         WHERE run_id = ? AND generation IS ? AND state IN ${NON_TERMINAL} AND cancel_requested = 0`,
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
      ).rowsWritten > 0
    );
  }
  /** Pushes a live attempt's claim deadline forward (fenced). */
  refreshClaim(runId: string, generation: string, deadline: number, now: number): boolean {
    return this.#updateHeld(REFRESH_CLAIM, deadline, runId, generation, now);
  }

  /** Parks a running run (fenced; refused once a cancel was requested). */
  park(
    runId: string,
    generation: string,
    reason: TaskWaitReason,
    nextAt: number | null,
    waitStep: string | null,
    waitEvent: string | null,
    now: number,
  ): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'waiting', wait_reason = ?, wait_step = ?, wait_event = ?,
           next_at = ?, generation = NULL, updated_at = ?
         WHERE run_id = ? AND generation = ? AND state = 'running' AND cancel_requested = 0`,
        reason,
        waitStep,
        waitEvent,
        nextAt,
        now,
        runId,
        generation,
      ).rowsWritten > 0
    );
  }

  /**
   * Settles a run. Fenced on `generation` when one is given (an attempt settling its own run);
   * otherwise it settles any non-terminal run (a parked run cancelled, a run failed before a claim).
   */
  settle(runId: string, generation: string | null, settlement: Settlement, now: number): boolean {
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
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = ?, result = ?, error = ?,
           cancel_reason = coalesce(?, cancel_reason), generation = NULL, next_at = NULL,
           wait_reason = NULL, wait_step = NULL, wait_event = NULL, settled_at = ?, updated_at = ?
         WHERE run_id = ? AND ${fence}`,
        ...params,
      ).rowsWritten > 0
    );
  }
  /** Deletes the run row of an attempt that holds it (fenced); the caller deletes its data. */
  deleteHeld(runId: string, generation: string): boolean {
    return (
      this.#sql.exec(
        "DELETE FROM dk_tasks_runs WHERE run_id = ? AND generation = ? AND state = 'running'",
        runId,
        generation,
      ).rowsWritten > 0
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

  /** Runs, newest first. */
  listRuns(filter: RunFilter): RunRow[] {
    const where: string[] = [];
    const params: SqlStorageValue[] = [];
    if (filter.definition !== undefined) {
      where.push("definition = ?");
      params.push(filter.definition);
    }
    if (filter.states && filter.states.length > 0) {
      where.push(`state IN (${filter.states.map(() => "?").join(", ")})`);
      params.push(...filter.states);
    }
    if (filter.after) {
      where.push("(created_at < ? OR (created_at = ? AND run_id < ?))");
      params.push(filter.after.createdAt, filter.after.createdAt, filter.after.runId);
    }
    // A range of the (created_at, run_id) index the page walks anyway.
    if (filter.createdAfter !== undefined) {
      where.push("created_at > ?");
      params.push(filter.createdAfter);
    }
    if (filter.createdBefore !== undefined) {
      where.push("created_at < ?");
      params.push(filter.createdBefore);
    }
    const clause = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    return this.#sql
      .exec<RunRow & Record<string, SqlStorageValue>>(
        `SELECT * FROM dk_tasks_runs ${clause} ORDER BY created_at DESC, run_id DESC LIMIT ?`,
        ...params,
        filter.limit,
      )
      .toArray();
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
