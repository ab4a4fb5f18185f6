import { parseDuration } from "./duration";
import { TasksError } from "./errors";
import { validateName } from "./names";
import { DEFAULT_STEP_POLICY, resolvePolicy, type StepPolicy } from "./policy";
import { type RunRow, TERMINAL_STATES } from "./rows";
import { Runner } from "./runner";
import { migrate } from "./schema";
import { toRunSnapshot, toStepSnapshots } from "./snapshot";
import { TaskStore } from "./store";
import type {
  DeleteOptions,
  ListOptions,
  RunOptions,
  SendEventResult,
  TaskDefinitions,
  TaskHandle,
  TaskInput,
  TaskOutput,
  TaskReceipt,
  TaskRunSnapshot,
  TaskStepSnapshot,
  TasksOptions,
} from "./types";
import { DEFAULT_MAX_VALUE_BYTES, encodeValue } from "./values";

const DEFAULT_CLAIM_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_STEPS = 10_000;
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1_000;

function pageLimit(limit: number | undefined): number {
  const value = limit ?? DEFAULT_PAGE;
  if (!Number.isInteger(value) || value < 1 || value > MAX_PAGE) {
    throw new TasksError(
      "tasks/invalid-option",
      `limit must be an integer from 1 to ${MAX_PAGE}, got ${value}.`,
    );
  }
  return value;
}

/**
 * Durable, replayable task runs for one Durable Object. Construct it in the object's constructor
 * from the object's `ctx` with the definitions map; it owns the `dk_tasks_*` tables of that object.
 *
 * The engine never touches the alarm: call {@link Tasks.alarm} from the object's `alarm()` and
 * re-arm the alarm to the earliest {@link Tasks.nextWakeAt} of all parts (or pass `armAlarm`).
 */
export class Tasks<Definitions extends TaskDefinitions = TaskDefinitions> {
  readonly #store: TaskStore;
  readonly #definitions: Definitions;
  readonly #defaults: StepPolicy;
  readonly #claimTimeoutMs: number;
  readonly #maxValueBytes: number;
  readonly #maxSteps: number;
  readonly #runner: Runner;

  /**
   * @throws TasksError `tasks/invalid-name` for a definition name that is empty, over 256 characters
   *   or uses the reserved `__dk` prefix; `tasks/invalid-option` for a bad duration or limit.
   */
  constructor(ctx: DurableObjectState, options: TasksOptions<Definitions>) {
    for (const name of Object.keys(options.definitions)) validateName(name, "A definition name");
    this.#definitions = options.definitions;
    this.#defaults = resolvePolicy(
      DEFAULT_STEP_POLICY,
      options.retries,
      options.stepTimeout,
      "default step",
    );
    this.#claimTimeoutMs =
      options.claimTimeout === undefined
        ? DEFAULT_CLAIM_TIMEOUT_MS
        : parseDuration(options.claimTimeout, "claimTimeout");
    this.#maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
    this.#maxSteps = options.maxStepsPerRun ?? DEFAULT_MAX_STEPS;
    for (const [what, value] of [
      ["maxValueBytes", this.#maxValueBytes],
      ["maxStepsPerRun", this.#maxSteps],
    ] as const) {
      if (!Number.isInteger(value) || value < 1) {
        throw new TasksError(
          "tasks/invalid-option",
          `${what} must be a positive integer, got ${value}.`,
        );
      }
    }
    migrate(ctx.storage);
    this.#store = new TaskStore(ctx.storage);
    this.#runner = new Runner({
      store: this.#store,
      definitions: options.definitions,
      defaults: this.#defaults,
      claimTimeoutMs: this.#claimTimeoutMs,
      maxValueBytes: this.#maxValueBytes,
      maxSteps: this.#maxSteps,
      hooks: { onEvent: options.onEvent, onError: options.onError, armAlarm: options.armAlarm },
    });
  }

  /**
   * Accepts a run durably and starts its first attempt in this invocation, without waiting for it.
   * The same `runId` or `idempotencyKey` joins the existing run (`accepted: false`).
   *
   * @throws TasksError `tasks/unknown-definition`, `tasks/invalid-name`, `tasks/idempotency-conflict`
   *   (a key or id already used by another definition, or a runId/key pair naming two runs),
   *   `tasks/serialization` (input or metadata not storable or over `maxValueBytes`).
   */
  async run<Name extends keyof Definitions & string>(
    definition: Name,
    input?: TaskInput<Definitions[Name]>,
    options: RunOptions = {},
  ): Promise<TaskReceipt> {
    this.#assertDefinition(definition);
    const { runId: givenId, idempotencyKey: key } = options;
    if (givenId !== undefined) validateName(givenId, "A run id", false);
    if (key !== undefined) validateName(key, "An idempotency key", false);
    const byId = givenId === undefined ? undefined : this.#store.runs.getRun(givenId);
    const byKey = key === undefined ? undefined : this.#store.runs.getRunByKey(key);
    if (byId && byKey && byId.run_id !== byKey.run_id) {
      throw new TasksError(
        "tasks/idempotency-conflict",
        `Run id "${byId.run_id}" and idempotency key "${key}" name two different runs; pass one of them, or both of the same run.`,
      );
    }
    const existing = byId ?? byKey;
    if (existing) {
      if (existing.definition !== definition) {
        throw new TasksError(
          "tasks/idempotency-conflict",
          `Run "${existing.run_id}" belongs to definition "${existing.definition}"; its ${byId ? "run id" : "idempotency key"} cannot start a "${definition}" run. Use another ${byId ? "run id" : "key"}.`,
        );
      }
      if (key !== undefined && existing.idempotency_key !== key) {
        throw new TasksError(
          "tasks/idempotency-conflict",
          `Run "${existing.run_id}" has ${existing.idempotency_key === null ? "no idempotency key" : `idempotency key "${existing.idempotency_key}"`}; it cannot be joined with key "${key}".`,
        );
      }
      if (givenId !== undefined && existing.run_id !== givenId) {
        throw new TasksError(
          "tasks/idempotency-conflict",
          `Idempotency key "${key}" belongs to run "${existing.run_id}", not "${givenId}".`,
        );
      }
      return {
        runId: existing.run_id,
        definition,
        accepted: false,
        state: existing.state,
        createdAt: existing.created_at,
      };
    }
    const inputText = encodeValue(input, this.#maxValueBytes, "input");
    const metadata =
      options.metadata === undefined
        ? null
        : encodeValue(options.metadata, this.#maxValueBytes, "metadata");
    const runId = givenId ?? `task_${crypto.randomUUID()}`;
    const now = Date.now();
    this.#store.runs.insertRun({
      runId,
      definition,
      input: inputText,
      metadata,
      key: key ?? null,
      retain: options.retain !== false,
      now,
    });
    this.#runner.emit({ type: "task:accepted", runId, definition });
    // The warm path: the first attempt claims the run before this method returns.
    this.#runner.start(runId, now);
    // The state as the warm start left it, before this method yields to the attempt.
    const state = this.#store.runs.getRun(runId)?.state ?? "pending";
    await this.#runner.flushWakes();
    return { runId, definition, accepted: true, state, createdAt: now };
  }

  /** A typed lens on one definition: its `get`, `getByIdempotencyKey` and `cancel` see only its runs. */
  handle<Name extends keyof Definitions & string>(
    definition: Name,
  ): TaskHandle<TaskInput<Definitions[Name]>, TaskOutput<Definitions[Name]>> {
    this.#assertDefinition(definition);
    type Output = TaskOutput<Definitions[Name]>;
    const own = (row: RunRow | undefined) => (row?.definition === definition ? row : undefined);
    return {
      name: definition,
      run: (input, options) => this.run(definition, input, options),
      get: (runId) =>
        this.#snapshot(own(this.#store.runs.getRun(runId))) as TaskRunSnapshot<Output> | null,
      getByIdempotencyKey: (key) =>
        this.#snapshot(own(this.#store.runs.getRunByKey(key))) as TaskRunSnapshot<Output> | null,
      cancel: async (runId, reason) =>
        own(this.#store.runs.getRun(runId)) ? this.cancel(runId, reason) : false,
    };
  }

  /** The run's snapshot, or null. */
  get(runId: string): TaskRunSnapshot | null {
    return this.#snapshot(this.#store.runs.getRun(runId));
  }

  /** The snapshot of the run an idempotency key names, or null. */
  getByIdempotencyKey(key: string): TaskRunSnapshot | null {
    return this.#snapshot(this.#store.runs.getRunByKey(key));
  }

  /** The run's journal in step order, including steps settled but not yet written; [] if unknown. */
  steps(runId: string): TaskStepSnapshot[] {
    const rows = this.#store.steps.listSteps(runId);
    const active = this.#runner.active.get(runId);
    return toStepSnapshots(active ? [...rows, ...active.writer.pending] : rows);
  }

  /**
   * Runs, newest first; pass the last `runId` of a page as `after` for the next page.
   *
   * @throws TasksError `tasks/invalid-option` for a bad limit or an `after` run that does not exist.
   */
  list(options: ListOptions = {}): TaskRunSnapshot[] {
    const limit = pageLimit(options.limit);
    let after: { createdAt: number; runId: string } | undefined;
    if (options.after !== undefined) {
      const row = this.#store.runs.getRun(options.after);
      if (!row) {
        throw new TasksError(
          "tasks/invalid-option",
          `The paging cursor "${options.after}" names no run (it may have been deleted); list from the start.`,
        );
      }
      after = { createdAt: row.created_at, runId: row.run_id };
    }
    const states =
      options.status === undefined
        ? undefined
        : Array.isArray(options.status)
          ? options.status
          : [options.status];
    return this.#store.runs
      .listRuns({ definition: options.definition, states, limit, after })
      .map((row) => this.#snapshot(row) as TaskRunSnapshot);
  }

  /**
   * Cancels a run. A parked run settles as cancelled at once; a live attempt is aborted through its
   * signal and settles at its next step boundary. Returns false for a settled or unknown run.
   */
  async cancel(runId: string, reason?: string): Promise<boolean> {
    const row = this.#store.runs.getRun(runId);
    if (!row || TERMINAL_STATES.has(row.state)) return false;
    const now = Date.now();
    const active = this.#runner.active.get(runId);
    if (active) {
      this.#store.runs.requestCancel(runId, reason ?? null, now);
      active.requestCancel(reason ?? null);
      return true;
    }
    if (
      !this.#store.runs.settle(
        runId,
        null,
        { state: "cancelled", cancelReason: reason ?? null },
        now,
      )
    ) {
      return false;
    }
    this.#runner.emit({
      type: "task:cancelled",
      runId,
      definition: row.definition,
      reason: reason ?? null,
    });
    return true;
  }

  /**
   * Deletes settled runs with their journals and buffered events, oldest settled first.
   *
   * @returns how many runs were deleted.
   * @throws TasksError `tasks/invalid-option` for a non-terminal status or a bad limit.
   */
  delete(options: DeleteOptions = {}): number {
    const states = options.status ?? ["completed", "failed", "cancelled"];
    for (const state of states) {
      if (!TERMINAL_STATES.has(state)) {
        throw new TasksError(
          "tasks/invalid-option",
          `delete() removes settled runs only; "${state}" is not completed, failed or cancelled. Cancel a live run first.`,
        );
      }
    }
    if (states.length === 0) return 0;
    const before = options.settledBefore;
    const rows = this.#store.runs.settledRuns(
      states,
      before === undefined ? null : before instanceof Date ? before.getTime() : before,
      pageLimit(options.limit),
    );
    let deleted = 0;
    for (const row of rows) {
      if (this.#store.transaction(() => this.#store.deleteTerminalRun(row.run_id))) {
        deleted++;
        this.#runner.emit({ type: "task:deleted", runId: row.run_id, definition: row.definition });
      }
    }
    return deleted;
  }

  /**
   * Delivers an event to a run. A run parked in `step.waitForEvent` for this type wakes and
   * continues in this invocation; otherwise the event is buffered until a wait for its type
   * consumes it (the oldest first).
   *
   * @throws TasksError `tasks/run-not-found`, `tasks/run-settled`, `tasks/invalid-name` (type),
   *   `tasks/serialization` (payload).
   */
  async sendEvent(runId: string, type: string, payload?: unknown): Promise<SendEventResult> {
    validateName(type, "An event type", false);
    const row = this.#store.runs.getRun(runId);
    if (!row) {
      throw new TasksError("tasks/run-not-found", `No run "${runId}" exists; check the run id.`);
    }
    if (TERMINAL_STATES.has(row.state)) {
      throw new TasksError(
        "tasks/run-settled",
        `Run "${runId}" is already ${row.state}; it takes no more events.`,
      );
    }
    const text = encodeValue(payload, this.#maxValueBytes, "payload");
    const now = Date.now();
    const ref = { runId, definition: row.definition, eventType: type };
    if (
      row.state === "waiting" &&
      row.wait_reason === "event" &&
      row.wait_event === type &&
      row.wait_step !== null &&
      !this.#runner.active.has(runId) &&
      this.#store.deliverEvent(runId, row.wait_step, text, now)
    ) {
      this.#runner.emit({ type: "task:event:delivered", ...ref });
      this.#runner.start(runId, now);
      await this.#runner.flushWakes();
      return "delivered";
    }
    this.#store.events.bufferEvent(runId, type, text, now);
    this.#runner.emit({ type: "task:event:buffered", ...ref });
    return "buffered";
  }

  /** The earliest time a run needs a wake (ms since epoch), or null. Re-arm the alarm to it. */
  nextWakeAt(): number | null {
    return this.#store.runs.nextWakeAt();
  }

  /**
   * The engine's share of the host's alarm: starts an attempt for every due run (the claim backstop
   * reclaims runs whose attempt died), extends the claims of attempts still alive in this isolate,
   * and waits up to 10 s for the attempts it started. Re-arm the alarm afterwards.
   */
  async alarm(): Promise<void> {
    await this.#runner.alarm();
  }

  #assertDefinition(name: string): void {
    validateName(name, "A definition name");
    if (!Object.hasOwn(this.#definitions, name)) {
      throw new TasksError(
        "tasks/unknown-definition",
        `Unknown task definition "${name}"; declare it in the definitions map passed to new Tasks().`,
      );
    }
  }

  #snapshot(row: RunRow | undefined): TaskRunSnapshot | null {
    return row ? toRunSnapshot(row) : null;
  }
}
