import { type JournalLoad, loadJournal } from "./journal-load";
import type { EventRow, RunRow, RunState, StepRow, WaitReason } from "./rows";

/** Raised inside a transaction when a fenced write finds another attempt holding the run. */
export class FenceLost {
  constructor(readonly runId: string) {}
}

const NON_TERMINAL = "('pending', 'running', 'waiting')";

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

/** Fields a settle writes. */
export interface Settlement {
  state: "completed" | "failed" | "cancelled";
  result?: string | null;
  error?: string | null;
  cancelReason?: string | null;
}

/** Filters of {@link TaskStore.listRuns}. */
export interface RunFilter {
  definition?: string;
  states?: readonly RunState[];
  limit: number;
  after?: { createdAt: number; runId: string };
}

/**
 * Every SQL statement of the package (the replay's journal load is spelled out in
 * `journal-load.ts`). Each method is one statement, except where it says it is a transaction;
 * callers group statements of one state change with {@link TaskStore.transaction}.
 * Fenced methods take the attempt's generation and return false (or throw {@link FenceLost} inside
 * a transaction) when another attempt holds the run.
 */
export class TaskStore {
  readonly #storage: DurableObjectStorage;
  readonly #sql: SqlStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = storage.sql;
  }

  /** Runs `fn` as one SQLite transaction: it commits when `fn` returns and rolls back if it throws. */
  transaction<T>(fn: () => T): T {
    return this.#storage.transactionSync(fn);
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
    now: number;
  }): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_runs
        (run_id, definition, state, input, metadata, idempotency_key, retain, next_at, created_at, updated_at)
       VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)`,
      row.runId,
      row.definition,
      row.input,
      row.metadata,
      row.key,
      row.retain ? 1 : 0,
      row.now,
      row.now,
      row.now,
    );
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
    for (const r of cursor) {
      rows.push({
        name: r[0] as string,
        seq: r[1] as number,
        kind: r[2] as StepRow["kind"],
        state: r[3] as StepRow["state"],
        attempt: r[4] as number,
        value: r[5] as string | null,
        wake_at: r[6] as number | null,
        event_type: r[7] as string | null,
        next_step: r[8] as string | null,
        at: r[9] as number,
      });
    }
    return rows;
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
    now: number,
  ): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET state = 'running', generation = ?, attempt = ?, next_at = ?,
           wait_reason = NULL, wait_step = NULL, wait_event = NULL,
           started_at = coalesce(started_at, ?), updated_at = ?
         WHERE run_id = ? AND generation IS ? AND state IN ${NON_TERMINAL} AND cancel_requested = 0`,
        generation,
        attempt,
        deadline,
        now,
        now,
        runId,
        seen,
      ).rowsWritten > 0
    );
  }

  /** Pushes a live attempt's claim deadline forward (fenced). */
  refreshClaim(runId: string, generation: string, deadline: number, now: number): boolean {
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET next_at = ?, updated_at = ?
         WHERE run_id = ? AND generation = ? AND state = 'running'`,
        deadline,
        now,
        runId,
        generation,
      ).rowsWritten > 0
    );
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

  /** Parks a running run (fenced; refused once a cancel was requested). */
  park(
    runId: string,
    generation: string,
    reason: WaitReason,
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

  /** Deletes a completed run of an attempt that holds it (fenced), with its journal and events. */
  deleteSettledByAttempt(runId: string, generation: string): boolean {
    const deleted =
      this.#sql.exec(
        "DELETE FROM dk_tasks_runs WHERE run_id = ? AND generation = ? AND state = 'running'",
        runId,
        generation,
      ).rowsWritten > 0;
    if (deleted) this.deleteRunData(runId);
    return deleted;
  }

  /** Deletes a run's journal and buffered events (not the run row). */
  deleteRunData(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_steps WHERE run_id = ?", runId);
    this.#sql.exec("DELETE FROM dk_tasks_events WHERE run_id = ?", runId);
  }

  /** Deletes one terminal run with its journal and events. */
  deleteTerminalRun(runId: string): boolean {
    const deleted =
      this.#sql.exec(
        "DELETE FROM dk_tasks_runs WHERE run_id = ? AND state IN ('completed', 'failed', 'cancelled')",
        runId,
      ).rowsWritten > 0;
    if (deleted) this.deleteRunData(runId);
    return deleted;
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
    return (
      this.#sql.exec(
        `UPDATE dk_tasks_runs SET status_message = ?, updated_at = ?
         WHERE run_id = ? AND generation = ? AND state = 'running'`,
        message,
        now,
        runId,
        generation,
      ).rowsWritten > 0
    );
  }

  /**
   * Delivers an event to a run parked on it: the waiting journal row becomes the completed event
   * and the run becomes due now. Two rows in one transaction; false if the run stopped waiting.
   */
  deliverEvent(runId: string, step: string, payload: string, now: number): boolean {
    return this.transaction(() => {
      const woke =
        this.#sql.exec(
          `UPDATE dk_tasks_runs SET next_at = ?, updated_at = ?
           WHERE run_id = ? AND state = 'waiting' AND wait_reason = 'event' AND wait_step = ?`,
          now,
          now,
          runId,
          step,
        ).rowsWritten > 0;
      if (!woke) return false;
      this.#sql.exec(
        `UPDATE dk_tasks_steps SET state = 'completed', value = ?, at = ?
         WHERE run_id = ? AND name = ? AND state = 'waiting'`,
        payload,
        now,
        runId,
        step,
      );
      return true;
    });
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

  deleteEvent(runId: string, seq: number): void {
    this.#sql.exec("DELETE FROM dk_tasks_events WHERE run_id = ? AND seq = ?", runId, seq);
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
    states: readonly RunState[],
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
}
