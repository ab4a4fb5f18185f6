import { type AlarmPart, claimPart } from "@durablekit/compose";
import { check, checkName, checkOptions } from "./arguments";
import { Runner } from "./attempt/runner";
import { ChildRuns } from "./children/child-runs";
import { refusal, type TaskChildReply } from "./children/protocol";
import { DEFAULT_DELIVERY_TIMEOUT_MS, type TaskChildSnapshot } from "./children/types";
import { TasksError } from "./errors";
import { priorityOf, type ResolvedDefinition, resolveDefinition } from "./flow/definition";
import {
  FlowControl,
  type FlowMoves,
  type FlowPlacement,
  SCHEDULE_LANE_PREFIX,
} from "./flow/flow-control";
import type { TaskSchedule, TaskScheduleSnapshot } from "./flow/options";
import { type ScheduledRun, Schedules } from "./flow/schedules";
import { DEFAULT_STEP_POLICY, resolvePolicy } from "./policy";
import { TaskRunEventLog } from "./run-event-log";
import { toAttemptSnapshots, toRunSnapshot, toStepSnapshots } from "./snapshot";
import { toEntry } from "./steps/step-journal";
import { type RunRow, TERMINAL_STATES } from "./store/rows";
import { RUN_STATES } from "./store/run-store";
import { migrate } from "./store/schema";
import { TaskStore } from "./store/store";
import type {
  TaskAttemptSnapshot,
  TaskDefinitions,
  TaskDeleteOptions,
  TaskHandle,
  TaskHistoryOptions,
  TaskInput,
  TaskListOptions,
  TaskListPage,
  TaskOutput,
  TaskReceipt,
  TaskRestartOptions,
  TaskRestartResult,
  TaskRestartSnapshot,
  TaskRunCounts,
  TaskRunHistory,
  TaskRunOptions,
  TaskRunSnapshot,
  TaskSendEventResult,
  TaskStepJournalSnapshot,
  TaskStepSnapshot,
  TasksOptions,
  TaskTriggerBatch,
  TaskTriggerOptions,
  TaskTriggerReceipt,
} from "./types";
import { DEFAULT_MAX_VALUE_BYTES, decodeValue, encodeValue } from "./values";

/** A new run's row, as `insertRun` takes it. */
type NewRun = Parameters<TaskStore["runs"]["insertRun"]>[0];

/** Where a new run went, and the runs its placement cancelled. */
interface Placed {
  placement: FlowPlacement;
  moves: FlowMoves;
}

/** The earliest of some wake times, or null when none is set. */
function earliest(wakes: ReadonlyArray<number | null>): number | null {
  let at: number | null = null;
  for (const wake of wakes) if (wake !== null && (at === null || wake < at)) at = wake;
  return at;
}

/** The error for a run id that names no run. */
function noSuchRun(runId: string): TasksError {
  return new TasksError("tasks/not-found", `No run "${runId}" exists; check the run id.`);
}

const DEFAULT_CLAIM_TIMEOUT_MS = 5_000;

/**
 * The storages a `Tasks` was constructed over in this isolate. The first construction in an
 * isolate is a new instance of the object: no attempt of it can be running yet.
 */
const constructed = new WeakSet<DurableObjectStorage>();

/** A `Date` or epoch-milliseconds option as milliseconds; undefined when it was not given. */
function timeOption(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== "number" || !Number.isFinite(ms)) {
    throw new TasksError(
      "tasks/invalid-argument",
      `list() ${name} must be a Date or epoch milliseconds; got ${String(value)}.`,
    );
  }
  return ms;
}

/** A W3C `traceparent` of version 00, with trace and parent ids that are not all zero. */
function isTraceparent(value: unknown): value is string {
  if (typeof value !== "string") return false;
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(value);
  return match !== null && !/^0+$/.test(match[1] as string) && !/^0+$/.test(match[2] as string);
}
const DEFAULT_MAX_STEPS = 10_000;
/** As `agents`' breaker: three consecutive resets without progress, then the run fails. */
const DEFAULT_MAX_ATTEMPTS_WITHOUT_PROGRESS = 4;
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1_000;
/** The default bound of `countByState()`. */
const DEFAULT_COUNT = 1_000;
const RUN_STATE_SET: ReadonlySet<string> = new Set<string>(RUN_STATES);

/** A page token: the keyset (`created_at`, `run_id`) of the last run of a page. Opaque to callers. */
const CURSOR = /^(\d+):([\s\S]+)$/;

/**
 * Durable, replayable task runs for one Durable Object. Construct it in the object's constructor
 * from the object's `ctx` with the definitions map; it owns the `dk_tasks_*` tables of that object.
 *
 * It is an `AlarmPart` (docs/composing.md): share the object's alarm with
 * `new Alarms(ctx, { parts: [this.tasks] })` and return `this.alarms.alarm()` from the object's
 * `alarm()`. Between alarms the engine asks for earlier wakes itself (`requestWake`, earlier-only)
 * whenever it writes a wake time: a claim deadline, a sleep, a retry, an event timeout.
 */
export class Tasks<Definitions extends TaskDefinitions = TaskDefinitions> implements AlarmPart {
  readonly #store: TaskStore;
  readonly #definitions: ReadonlyMap<string, ResolvedDefinition>;
  /** Admission of flow-controlled runs (concurrency, rate limits, debounce, priority). */
  readonly #flow: FlowControl;
  /** Cron schedules, ticked by the alarm. */
  readonly #schedules: Schedules;
  /** The runs a schedule pass accepted in its transaction, announced once it committed. */
  #ticked: Array<{ row: NewRun; placed: Placed }> = [];
  readonly #maxValueBytes: number;
  readonly #now: () => number;
  readonly #runner: Runner;
  /** Runs in other objects; null without the `children` option. */
  readonly #children: ChildRuns | null;
  /**
   * Each run's lifecycle as a durable stream with a cursor: `read(runId, { from })` replays, then
   * tails; `sseResponse(this.tasks.events, runId, { request })` of `@durablekit/sse` serves it as
   * Server-Sent Events. See {@link TaskRunEventLog}.
   */
  readonly events: TaskRunEventLog;

  /**
   * Creates the `dk_tasks_*` tables (or migrates them) and registers the definitions.
   *
   * @throws TasksError `tasks/invalid-argument` for a missing `ctx`, a definition name that is empty,
   *   over 256 characters, has a lone surrogate or uses the reserved `__dk` prefix, a handler that is
   *   not a function, or a bad duration, limit or callback option; `tasks/schema-too-new` when the
   *   tables were written by a newer version of this package.
   * @throws {TasksError} `tasks/conflict` when the object already has a Tasks: construct parts once, in the constructor.
   */
  constructor(ctx: DurableObjectState, options: TasksOptions<Definitions>) {
    check.ctx(ctx, "new Tasks(ctx, options)");
    checkOptions(options, "new Tasks(ctx, options): options");
    const definitions = options?.definitions;
    if (typeof definitions !== "object" || definitions === null) {
      throw new TasksError(
        "tasks/invalid-argument",
        "new Tasks(ctx, { definitions }) needs the definitions map: versioned names to handlers.",
      );
    }
    const resolved = new Map<string, ResolvedDefinition>();
    for (const [name, entry] of Object.entries(definitions)) {
      resolved.set(name, resolveDefinition(name, entry));
    }
    check.callback(options.onEvent, "onEvent");
    check.callback(options.onError, "onError");
    check.callback(options.now, "now");
    this.#definitions = resolved;
    const defaults = resolvePolicy(
      DEFAULT_STEP_POLICY,
      options.retries,
      options.stepTimeoutMs,
      "default step",
    );
    const claimTimeoutMs = check.ms(
      options.claimTimeoutMs,
      "claimTimeoutMs",
      DEFAULT_CLAIM_TIMEOUT_MS,
    );
    this.#maxValueBytes = check.count(
      options.maxValueBytes,
      "maxValueBytes",
      DEFAULT_MAX_VALUE_BYTES,
    );
    const maxSteps = check.count(options.maxStepsPerRun, "maxStepsPerRun", DEFAULT_MAX_STEPS);
    const maxAttemptsWithoutProgress = check.count(
      options.maxAttemptsWithoutProgress,
      "maxAttemptsWithoutProgress",
      DEFAULT_MAX_ATTEMPTS_WITHOUT_PROGRESS,
    );
    this.#now = options.now ?? Date.now;
    migrate(ctx.storage);
    this.#store = new TaskStore(ctx.storage);
    this.events = new TaskRunEventLog(this.#store.runs, this.#store.log);
    this.#runner = new Runner({
      ctx,
      store: this.#store,
      handlers: new Map([...resolved].map(([name, definition]) => [name, definition.handler])),
      releaseQueued: (runId, now) => this.#releaseQueued(runId, now),
      otherWakeAt: () => earliest([this.#store.flows.nextWakeAt(), this.#schedules.nextWakeAt()]),
      defaults,
      claimTimeoutMs,
      maxValueBytes: this.#maxValueBytes,
      maxSteps,
      maxAttemptsWithoutProgress,
      now: this.#now,
      hooks: { onEvent: options.onEvent, onError: options.onError },
      children: () => this.#children,
    });
    this.#flow = new FlowControl({
      store: this.#store.flows,
      definition: (name) => this.#definitions.get(name),
      dequeue: (runId, now) => this.#dequeueRun(runId, now),
      requeue: (runId, reason, seq, now) => {
        this.#store.runs.requeue(runId, reason, seq, now);
      },
      queueAgain: (runId, seq, now) => this.#store.runs.queueAgain(runId, seq, now),
      cancelQueued: (runId, reason, now) =>
        this.#store.settle(runId, null, { state: "cancelled", cancelReason: reason }, now),
    });
    this.#store.onSlotFreed = (definition, key, now) => {
      this.#dequeued(this.#flow.pump(definition, key, now), now);
    };
    this.#releaseUnruled(resolved);
    this.#schedules = new Schedules({
      store: this.#store.schedules,
      encode: (input, what) => encodeValue(input, this.#maxValueBytes, what),
      hasDefinition: (name) => this.#definitions.has(name),
      inProgress: (runId) => {
        const head = this.#store.runs.headOf(runId);
        return head !== undefined && !TERMINAL_STATES.has(head.state);
      },
      exists: (runId) => this.#store.runs.hasRun(runId),
      accept: (run) => this.#acceptTick(run),
    });
    const declared = [...resolved.values()].flatMap((definition) =>
      definition.schedules.map((schedule) => ({ definition: definition.name, schedule })),
    );
    const now = this.#now();
    this.#store.transaction(() => this.#schedules.declare(declared, now));
    // A schedule's next tick is a wake like any other: asked for here, on every construction, as
    // a deploy may have added the schedule (earlier-only, so a later tick never moves another wake).
    const tick = this.#schedules.nextWakeAt();
    if (tick !== null) this.#runner.requestWake(tick);
    this.#recoverOrphans(ctx.storage);
    this.#store.onOwed = (ids, dueAt) => {
      this.#runner.requestWake(dueAt);
      this.#children?.deliverSoon(ids);
    };
    this.#children = this.#childRuns(ctx, options);
    claimPart(ctx, {
      part: "Tasks",
      construct: "this.tasks = new Tasks(ctx, { definitions })",
      breaks:
        "cannot see the first one's attempts: it would extend no claim of theirs and start its own beside them",
      conflict: (message) => new TasksError("tasks/conflict", message),
    });
  }

  // ── Starting runs ──

  /**
   * Accepts a run durably and starts its first attempt in this invocation, without waiting for it.
   * The same `runId` or `idempotencyKey` joins the existing run (`accepted: false`, `joinedBy` says
   * which matched) — also a fresh `runId` with a known key: the receipt's `runId` is then the owning
   * run's, not the one passed.
   *
   * @throws TasksError `tasks/unknown-definition`; `tasks/invalid-argument` (a bad definition name,
   *   run id, idempotency key or options); `tasks/conflict` (a key or id already used by another
   *   definition, a known run id with another key, or a runId/key pair naming two runs); `tasks/unserializable`, `tasks/too-large`,
   *   `tasks/too-deep` (input or metadata).
   */
  async run<Name extends keyof Definitions & string>(
    definition: Name,
    input?: TaskInput<Definitions[Name]>,
    options: TaskRunOptions = {},
  ): Promise<TaskReceipt> {
    const receipt = this.#accept(definition, input, options, null);
    // The first attempt's wake (its claim deadline) is set before this answers.
    await this.#runner.flushWakes();
    return receipt;
  }

  /**
   * Starts one run per batch of a source, exactly once: the run for positions `(from, to]` of
   * `source` (a stream's seqs, say), with input `{ source, from, to }`. The definition keeps, per
   * source, the end of the last batch that started a run, in the transaction that accepts the run:
   *
   * - a batch that ends at or before it (delivered again: a retry after a lost answer, a
   *   redelivery after a crash) starts nothing and answers the source's latest run
   *   (`accepted: false`, `joinedBy: "trigger"`);
   * - a batch that overlaps it starts at it, so no position is taken by two runs;
   * - a batch that starts past it (positions no call named) starts at its own `from`: what it
   *   skipped is the caller's to give.
   *
   * The run's id is `<definition>:<source>@<to>`. A definition with `debounce` cannot be
   * triggered (a gathered run keeps only the latest input, which would drop batches).
   *
   * @throws TasksError `tasks/unknown-definition`; `tasks/invalid-argument` (a malformed batch or
   *   option, a debounced definition); and what `run()` throws.
   */
  async trigger<Name extends keyof Definitions & string>(
    definition: Name,
    batch: TaskTriggerBatch,
    options: TaskTriggerOptions = {},
  ): Promise<TaskTriggerReceipt> {
    this.#assertDefinition(definition);
    checkOptions(options, "trigger() options");
    const { source, from, to } = checkBatch(batch);
    if (
      (options as TaskRunOptions).runId !== undefined ||
      (options as TaskRunOptions).idempotencyKey !== undefined
    ) {
      throw new TasksError(
        "tasks/invalid-argument",
        "trigger() names its run itself (<definition>:<source>@<to>); drop runId and idempotencyKey.",
      );
    }
    if ((this.#definitions.get(definition) as ResolvedDefinition).flow?.debounce) {
      throw new TasksError(
        "tasks/invalid-argument",
        `Definition "${definition}" has debounce, which keeps only the latest input of a key: a triggered batch could be dropped. Trigger a definition without debounce.`,
      );
    }
    const taken = this.#store.triggers.get(definition, source);
    if (taken !== null && to <= taken.position) {
      const run = this.#store.runs.getRun(taken.run_id);
      return {
        runId: taken.run_id,
        definition,
        accepted: false,
        joinedBy: "trigger",
        state: run?.state ?? "completed",
        createdAt: run?.created_at ?? taken.updated_at,
        from: taken.position,
        to: taken.position,
      };
    }
    const start = taken === null ? from : Math.max(from, taken.position);
    const runId = `${definition}:${source}@${to}`;
    const receipt = this.#accept(
      definition,
      { source, from: start, to },
      { ...options, runId },
      (id) => this.#store.triggers.advance(definition, source, to, id, this.#now()),
      false,
    );
    await this.#runner.flushWakes();
    return { ...receipt, from: start, to };
  }

  /**
   * `run()`; `link`, when given, is called with a new run's id in the transaction that accepts it,
   * before its first attempt starts: a child run's side of its exchange is written with the run.
   */
  #accept(
    definition: string,
    input: unknown,
    options: TaskRunOptions,
    link: ((runId: string) => void) | null,
    gather = true,
  ): TaskReceipt {
    this.#assertDefinition(definition);
    checkOptions(options, "run() options");
    const { runId: givenId, idempotencyKey: key } = options;
    if (givenId !== undefined) checkName(givenId, "A run id", false);
    if (key !== undefined) checkName(key, "An idempotency key", false);
    if (options.trace !== undefined && !isTraceparent(options.trace)) {
      throw new TasksError(
        "tasks/invalid-argument",
        `run() option trace must be a W3C traceparent ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", ids not all zero); got ${JSON.stringify(String(options.trace)).slice(0, 100)}.`,
      );
    }
    const deadlineMs =
      options.deadlineMs === undefined
        ? null
        : check.ms(options.deadlineMs, "run() option deadlineMs", 0, { min: 1 });
    for (const flag of ["retain", "paused"] as const) {
      if (options[flag] !== undefined && typeof options[flag] !== "boolean") {
        throw new TasksError(
          "tasks/invalid-argument",
          `run() option ${flag} must be a boolean; got ${String(options[flag])}.`,
        );
      }
    }
    const byId = givenId === undefined ? undefined : this.#store.runs.getRun(givenId);
    const byKey = key === undefined ? undefined : this.#store.runs.getRunByKey(key);
    if (byId && byKey && byId.run_id !== byKey.run_id) {
      throw new TasksError(
        "tasks/conflict",
        `Run id "${byId.run_id}" and idempotency key "${key}" name two different runs; pass one of them, or both of the same run.`,
      );
    }
    const existing = byId ?? byKey;
    if (existing) {
      if (existing.definition !== definition) {
        throw new TasksError(
          "tasks/conflict",
          `Run "${existing.run_id}" belongs to definition "${existing.definition}"; its ${byId ? "run id" : "idempotency key"} cannot start a "${definition}" run. Use another ${byId ? "run id" : "key"}.`,
        );
      }
      if (key !== undefined && existing.idempotency_key !== key) {
        throw new TasksError(
          "tasks/conflict",
          `Run "${existing.run_id}" has ${existing.idempotency_key === null ? "no idempotency key" : `idempotency key "${existing.idempotency_key}"`}; it cannot be joined with key "${key}".`,
        );
      }
      // A fresh run id with a known key joins the run that owns the key (a client retrying with a
      // new id): the receipt names the owning run and says how it was joined.
      return {
        runId: existing.run_id,
        definition,
        accepted: false,
        joinedBy: byId ? "runId" : "idempotencyKey",
        state: existing.state,
        createdAt: existing.created_at,
      };
    }
    const resolved = this.#definitions.get(definition) as ResolvedDefinition;
    const priority = priorityOf(options.priority, "run() option priority", resolved.priority);
    if (resolved.flow !== null && options.paused === true) {
      throw new TasksError(
        "tasks/invalid-argument",
        `Definition "${definition}" has flow control, so its runs cannot be accepted paused (a held run keeps its slot); pause the run once it has started.`,
      );
    }
    const flowKey = resolved.flow === null ? null : this.#flow.keyOf(resolved, input);
    const inputText = encodeValue(input, this.#maxValueBytes, "input");
    const metadata =
      options.metadata === undefined
        ? null
        : encodeValue(options.metadata, this.#maxValueBytes, "metadata");
    const runId = givenId ?? `task_${crypto.randomUUID()}`;
    const now = this.#now();
    const placed = this.#insertAndStart(
      {
        runId,
        definition,
        input: inputText,
        metadata,
        key: key ?? null,
        retain: options.retain !== false,
        trace: options.trace ?? null,
        paused: options.paused === true,
        deadlineAt: deadlineMs === null ? null : now + deadlineMs,
        flowKey,
        priority,
        now,
      },
      link,
      gather,
    );
    // The state as the warm start left it, before this method yields to the attempt.
    const found = this.#store.runs.headOf(placed.runId);
    const state = found?.state ?? "pending";
    if (placed.gatheredInto !== null) {
      const createdAt = this.#store.runs.getRun(placed.runId)?.created_at ?? now;
      return {
        runId: placed.runId,
        definition,
        accepted: false,
        joinedBy: "debounce",
        state,
        createdAt,
      };
    }
    return { runId, definition, accepted: true, joinedBy: null, state, createdAt: now };
  }

  /**
   * Writes a new run (and, in the same transaction, what `link` writes with its id) and starts
   * its first attempt: the warm path, in which the attempt claims the run before this returns. A
   * flow-controlled run is placed first: it may start, queue, or (`gather`, a `run()` call) be
   * gathered into its key's debounced run, which then takes its input. Answers the run's id (the
   * debounced run's when gathered) and the attempt (it settles when the attempt ends), or null
   * when none started.
   */
  #insertAndStart(
    row: NewRun,
    link: ((runId: string) => void) | null,
    gather: boolean,
  ): { runId: string; attempt: Promise<void> | null; gatheredInto: string | null } {
    const placed = this.#store.transaction(() => this.#place(row, link, gather));
    return this.#announce(row, placed);
  }

  /**
   * The writes of a new run, in the caller's transaction: a flow-controlled run is placed first
   * (it may start, queue, or be gathered into its key's debounced run, which takes its input),
   * then inserted with its log rows, and `link` writes with its id.
   */
  #place(row: NewRun, link: ((runId: string) => void) | null, gather: boolean): Placed {
    const moves: FlowMoves = { replaced: [] };
    const flowKey = row.flowKey ?? null;
    const placement: FlowPlacement =
      flowKey === null
        ? { kind: "start" }
        : this.#flow.place(row.definition, flowKey, row.now, moves, gather);
    if (placement.kind === "gather") {
      this.#store.runs.regather(
        placement.runId,
        row.input,
        row.metadata,
        placement.wakeAt,
        row.now,
      );
      return { placement, moves };
    }
    this.#store.runs.insertRun({ ...row, queue: placement.kind === "queue" ? placement : null });
    link?.(row.runId);
    this.#store.log.append(row.runId, "task:accepted", null, row.now);
    if (placement.kind === "queue") {
      this.#store.log.append(row.runId, "task:queued", { reason: placement.reason }, row.now);
    }
    if (row.paused === true) {
      this.#store.log.append(row.runId, "task:paused", { step: null }, row.now);
    }
    return { placement, moves };
  }

  /**
   * What follows a new run's commit: its events, the wakes its placement owes, and its first
   * attempt (the warm path: the attempt claims the run before this returns) when it starts now.
   * Answers the run's id (the debounced run's when gathered) and the attempt, or null.
   */
  #announce(
    row: NewRun,
    { placement, moves }: Placed,
  ): { runId: string; attempt: Promise<void> | null; gatheredInto: string | null } {
    for (const runId of moves.replaced) {
      this.#runner.emit({
        type: "task:cancelled",
        runId,
        definition: row.definition,
        reason: "replaced by a newer run of its key (keep-latest)",
      });
    }
    if (placement.kind === "gather") {
      this.#runner.requestWake(placement.wakeAt);
      return { runId: placement.runId, attempt: null, gatheredInto: placement.runId };
    }
    const ref = { runId: row.runId, definition: row.definition };
    this.#runner.emit({ type: "task:accepted", ...ref });
    const none = { runId: row.runId, attempt: null, gatheredInto: null };
    if (placement.kind === "queue") {
      this.#runner.emit({ type: "task:queued", ...ref, reason: placement.reason });
      if (placement.wakeAt !== null) this.#runner.requestWake(placement.wakeAt);
      const flowWake = this.#store.flows.nextWakeAt();
      if (flowWake !== null) this.#runner.requestWake(flowWake);
      return none;
    }
    if (row.paused === true) {
      this.#runner.emit({ type: "task:paused", ...ref, step: null });
      return none;
    }
    return { ...none, attempt: this.#runner.start(row.runId, row.now) };
  }

  /**
   * Runs that left their key's queue (a slot freed): due now, and started here in queue order once
   * the transaction that dequeued them has committed (`committed`: it has; else in a microtask,
   * after the settle that freed the slot). The wake is the backstop.
   */
  #dequeued(runIds: readonly string[], now: number, committed = false): void {
    if (runIds.length === 0) return;
    this.#runner.requestWake(now);
    const start = () => {
      for (const runId of runIds) {
        const head = this.#store.runs.headOf(runId);
        if (head === undefined || head.state === "queued") continue;
        this.#runner.emit({ type: "task:dequeued", runId, definition: head.definition });
        if (head.state === "pending") this.#runner.start(runId, now);
      }
    };
    if (committed) start();
    else queueMicrotask(start);
  }

  /**
   * A queued run whose wake came (a debounce's quiet period ended): it takes a slot, or waits in
   * its key's queue for one. True when it is pending now (the runner claims it).
   */
  #releaseQueued(runId: string, now: number): boolean {
    const row = this.#store.runs.getRun(runId);
    if (row?.state !== "queued" || row.flow_key === null || row.flow_key === undefined) {
      return false;
    }
    const key = row.flow_key;
    const started = this.#store.transaction(() =>
      this.#flow.releaseDebounced(runId, row.definition, key, now),
    );
    if (started) {
      this.#runner.emit({ type: "task:dequeued", runId, definition: row.definition });
    } else {
      const flowWake = this.#store.flows.nextWakeAt();
      if (flowWake !== null) this.#runner.requestWake(flowWake);
    }
    return started;
  }

  /**
   * A child run's acceptance ({@link ChildRunsHost.accept}): a new run of `definition` whose input
   * arrived as codec text the caller checked, linked by `link`, started warm; answers its id and
   * its first attempt.
   */
  #acceptChild(
    definition: string,
    inputText: string,
    link: (runId: string) => void,
  ): { runId: string; attempt: Promise<void> | null } {
    this.#assertDefinition(definition);
    const resolved = this.#definitions.get(definition) as ResolvedDefinition;
    const runId = `task_${crypto.randomUUID()}`;
    const { attempt } = this.#insertAndStart(
      {
        runId,
        definition,
        input: inputText,
        metadata: null,
        key: null,
        retain: true,
        trace: null,
        flowKey: resolved.flow === null ? null : this.#flow.keyOf(resolved, decodeValue(inputText)),
        priority: resolved.priority,
        now: this.#now(),
      },
      link,
      false,
    );
    return { runId, attempt };
  }

  /**
   * A typed lens on one definition: its `get`, `getByIdempotencyKey`, `cancel`, `pause`, `resume`
   * and `restart` see only its runs.
   *
   * @throws TasksError `tasks/invalid-argument`, `tasks/unknown-definition`.
   */
  handle<Name extends keyof Definitions & string>(
    definition: Name,
  ): TaskHandle<TaskInput<Definitions[Name]>, TaskOutput<Definitions[Name]>> {
    this.#assertDefinition(definition);
    type Output = TaskOutput<Definitions[Name]>;
    const own = (row: RunRow | undefined) => (row?.definition === definition ? row : undefined);
    return {
      name: definition,
      run: (input, options) => this.run(definition, input, options),
      get: (runId) => {
        checkName(runId, "A run id", false);
        return this.#snapshot(
          own(this.#store.runs.getRun(runId)),
        ) as TaskRunSnapshot<Output> | null;
      },
      getByIdempotencyKey: (key) => {
        checkName(key, "An idempotency key", false);
        return this.#snapshot(
          own(this.#store.runs.getRunByKey(key)),
        ) as TaskRunSnapshot<Output> | null;
      },
      cancel: async (runId, reason) => {
        checkName(runId, "A run id", false);
        return own(this.#store.runs.getRun(runId)) ? this.cancel(runId, reason) : false;
      },
      pause: async (runId) => {
        checkName(runId, "A run id", false);
        return own(this.#store.runs.getRun(runId)) ? this.pause(runId) : false;
      },
      resume: async (runId) => {
        checkName(runId, "A run id", false);
        return own(this.#store.runs.getRun(runId)) ? this.resume(runId) : false;
      },
      restart: async (runId, options) => {
        checkName(runId, "A run id", false);
        if (!own(this.#store.runs.getRun(runId))) throw noSuchRun(runId);
        return this.restart(runId, options);
      },
    };
  }

  // ── Schedules ──

  /**
   * Adds a cron schedule of `definition` at run time (or replaces the one with its id), kept in the
   * object's storage until {@link unschedule}: each tick starts one run with `schedule.input`, as
   * a schedule declared on the definition does. A schedule whose cron or time zone changed counts
   * its next tick from now.
   *
   * @throws TasksError `tasks/unknown-definition`; `tasks/invalid-argument` for a malformed cron,
   *   time zone, id, overlap, backfill or input; `tasks/conflict` for the id of a schedule declared
   *   on a definition.
   */
  async schedule<Name extends keyof Definitions & string>(
    definition: Name,
    schedule: TaskSchedule<TaskInput<Definitions[Name]>>,
  ): Promise<TaskScheduleSnapshot> {
    this.#assertDefinition(definition);
    const now = this.#now();
    const added = this.#store.transaction(() =>
      this.#schedules.add(definition, schedule as TaskSchedule, now),
    );
    this.#runner.requestWake(added.nextTickAt);
    await this.#runner.flushWakes();
    return added;
  }

  /**
   * Removes a schedule added with {@link schedule}; its runs already started go on. False for an
   * unknown id.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed id; `tasks/conflict` for a
   *   schedule declared on a definition (remove it from the definition instead).
   */
  unschedule(scheduleId: string): boolean {
    checkName(scheduleId, "A schedule id");
    return this.#schedules.remove(scheduleId);
  }

  /**
   * Every schedule of the object, by id: its cron, the next tick, the latest tick taken and its
   * run, and the ticks skipped (`missed` after downtime beyond `backfill`, `skipped` for overlap).
   */
  schedules(): TaskScheduleSnapshot[] {
    return this.#schedules.list();
  }

  // ── Reading runs ──

  /**
   * The run's snapshot, or `null` when no such run exists.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  get(runId: string): TaskRunSnapshot | null {
    checkName(runId, "A run id", false);
    return this.#snapshot(this.#store.runs.getRun(runId));
  }

  /**
   * The snapshot of the run an idempotency key names, or `null`.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed key.
   */
  getByIdempotencyKey(key: string): TaskRunSnapshot | null {
    checkName(key, "An idempotency key", false);
    return this.#snapshot(this.#store.runs.getRunByKey(key));
  }

  /**
   * The run's journal in step order, as stored (every settled step is written before its result
   * reaches the handler); `null` when no such run exists (or it was deleted).
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  steps(runId: string): TaskStepSnapshot[] | null {
    checkName(runId, "A run id", false);
    if (!this.#store.runs.hasRun(runId)) return null;
    return toStepSnapshots(this.#store.steps.listSteps(runId), this.#now());
  }

  /**
   * Everything a run's replay reads, in one consistent read: its snapshot, its input (as the handler
   * receives it) and its journal in step order (as {@link Tasks.steps}); `null` when no such run
   * exists (or it was deleted). For tools that record a run and replay it against other code
   * (`recordRun` of `@durablekit/testing`).
   *
   * With `maxValueBytes`, a view's read: each value whose stored text is over the bound is neither
   * read nor decoded — SQL returns only its size and first characters, as a `TaskTruncatedValue`
   * (see `isTruncatedValue`) in its place — so a run of large values costs what its facts cost.
   * Error records are read whole. With `maxTotalBytes` too, the step results returned whole stop at
   * that total (in step order) and the later ones come back truncated as well.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id, `maxValueBytes` or
   *   `maxTotalBytes`.
   */
  history(runId: string, options: TaskHistoryOptions = {}): TaskRunHistory | null {
    checkName(runId, "A run id", false);
    checkOptions(options, "history() options");
    if (options.maxValueBytes !== undefined) {
      const maxValueBytes = check.count(options.maxValueBytes, "maxValueBytes", 0);
      const maxTotalBytes = check.count(
        options.maxTotalBytes,
        "maxTotalBytes",
        Number.MAX_SAFE_INTEGER,
      );
      const read = this.#store.runs.getRunBounded(runId, maxValueBytes);
      if (!read) return null;
      return {
        run: toRunSnapshot(read.row, read.truncated),
        input: read.truncated.input ?? decodeValue(read.row.input),
        steps: toStepSnapshots(
          this.#store.steps.listStepsBounded(runId, maxValueBytes, maxTotalBytes),
          this.#now(),
        ),
        attempts: toAttemptSnapshots(this.#store.attempts.list(runId), read.row),
      };
    }
    const row = this.#store.runs.getRun(runId);
    if (!row) return null;
    return {
      run: toRunSnapshot(row),
      input: decodeValue(row.input),
      steps: toStepSnapshots(this.#store.steps.listSteps(runId), this.#now()),
      attempts: toAttemptSnapshots(this.#store.attempts.list(runId), row),
    };
  }

  /**
   * The child runs the run started in other objects (`step.startChild`), as this object knows them:
   * each `{ runId, step, target, definition, state, settledAt }`, `state` `starting` until the
   * child's object answered the start, `running` until its settlement arrived, `cancelled` once
   * this run settled before it; in start order; `null` when no such run exists. One read by the
   * run's key, nothing written.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  children(runId: string): TaskChildSnapshot[] | null {
    checkName(runId, "A run id", false);
    if (!this.#store.runs.hasRun(runId)) return null;
    return this.#store.children.list(runId).map((row) => ({
      runId: row.child_run_id,
      step: row.step,
      index: row.idx,
      target: JSON.parse(row.target) as { binding: string; id: string },
      definition: row.definition,
      state: row.state,
      settledAt: row.settled_at,
    }));
  }

  /**
   * The run's step journals (`step.journal(name)`: the calls of programs run inside it), each with
   * its execution and its entries in recorded order, by journal name; `[]` for a run that took none,
   * `null` when no such run exists. A reader's view (an inspector decodes the entries with the
   * bridge's `Executor.calls`): one read by the run's key, nothing written.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  journals(runId: string): TaskStepJournalSnapshot[] | null {
    checkName(runId, "A run id", false);
    if (!this.#store.runs.hasRun(runId)) return null;
    const journals = new Map<string, TaskStepJournalSnapshot>();
    for (const row of this.#store.calls.listRun(runId)) {
      let journal = journals.get(row.journal);
      if (journal === undefined) {
        journal = { name: row.journal, executionId: row.executionId, entries: [] };
        journals.set(row.journal, journal);
      }
      journal.entries.push(toEntry(row));
    }
    return [...journals.values()];
  }

  /**
   * The run's attempts in order — when each started and ended, and how (settled it, parked it at a
   * sleep, an event wait or a failed step's back-off, or was cut short) — for a run's timeline;
   * `null` when no such run exists (or it was deleted). Read by the run's key: the rows of attempts
   * that ended without settling the run, and the current or settling attempt from the run row.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  attempts(runId: string): TaskAttemptSnapshot[] | null {
    checkName(runId, "A run id", false);
    const row = this.#store.runs.getRun(runId);
    if (!row) return null;
    return toAttemptSnapshots(this.#store.attempts.list(runId), row);
  }

  /**
   * One page of runs, newest first: `{ items, next }`. Pass `next` back as `{ cursor: next }` for
   * the following page; it is `null` on the last page.
   *
   * @throws TasksError `tasks/invalid-argument` for a bad limit, state, definition or cursor.
   */
  list(options: TaskListOptions = {}): TaskListPage {
    checkOptions(options, "list() options");
    const limit = check.count(options.limit, "limit", DEFAULT_PAGE, { max: MAX_PAGE });
    if (options.definition !== undefined) checkName(options.definition, "A definition name", false);
    const states =
      options.state === undefined
        ? undefined
        : Array.isArray(options.state)
          ? options.state
          : [options.state];
    for (const state of states ?? []) {
      if (!RUN_STATE_SET.has(state)) {
        throw new TasksError(
          "tasks/invalid-argument",
          `list() state must be one of ${RUN_STATES.join(", ")}; got ${JSON.stringify(state)}.`,
        );
      }
    }
    let after: { createdAt: number; runId: string } | undefined;
    if (options.cursor !== undefined) {
      const match = typeof options.cursor === "string" ? CURSOR.exec(options.cursor) : null;
      if (!match) {
        throw new TasksError(
          "tasks/invalid-argument",
          "list() cursor is not a token list() returned; pass the `next` of the previous page, or omit it to list from the start.",
        );
      }
      after = { createdAt: Number(match[1]), runId: match[2] as string };
    }
    const createdAfter = timeOption(options.createdAfter, "createdAfter");
    const createdBefore = timeOption(options.createdBefore, "createdBefore");
    const values = check.flag(options.values, "values", true);
    // One row more than the page tells whether another page follows.
    const rows = this.#store.runs.listRuns({
      definition: options.definition,
      states,
      limit: limit + 1,
      after,
      values,
      ...(createdAfter === undefined ? {} : { createdAfter }),
      ...(createdBefore === undefined ? {} : { createdBefore }),
    });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return {
      items: items.map((row) => {
        const snapshot = toRunSnapshot(row);
        if (!values && "result" in snapshot) delete (snapshot as { result?: unknown }).result;
        return snapshot;
      }),
      next: rows.length > limit && last ? `${last.created_at}:${last.run_id}` : null,
    };
  }

  /**
   * How many runs are in each state, each state counted up to `max` (default 1,000, at most
   * 100,000) from the index of runs by state alone: no run row is read, so the cost is the counts,
   * not the table. A state holding more than `max` runs is reported at `max` and listed in `capped`.
   *
   * @throws TasksError `tasks/invalid-argument` for a bad `max`.
   */
  countByState(options: { max?: number } = {}): TaskRunCounts {
    checkOptions(options, "countByState() options");
    const max = check.count(options.max, "max", DEFAULT_COUNT, { max: 100_000 });
    return this.#store.runs.countByState(max);
  }

  // ── Changing runs ──

  /**
   * Cancels a run. A parked run settles as cancelled at once; a live attempt is aborted through its
   * signal and settles at its next step boundary. A run with completed steps that have a
   * compensation (`compensate`) undoes them first, last started first, then settles cancelled: a
   * parked one is replayed for it at once. Returns false for a settled or unknown run.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id or a reason that is not a string.
   */
  async cancel(runId: string, reason?: string): Promise<boolean> {
    checkName(runId, "A run id", false);
    if (reason !== undefined && typeof reason !== "string") {
      throw new TasksError(
        "tasks/invalid-argument",
        `cancel() reason must be a string; got ${String(reason)}.`,
      );
    }
    const row = this.#store.runs.getRun(runId);
    if (!row || TERMINAL_STATES.has(row.state)) return false;
    const now = this.#now();
    const active = this.#runner.active.get(runId);
    if (active) {
      this.#store.runs.requestCancel(runId, reason ?? null, now);
      active.requestCancel(reason ?? null);
      return true;
    }
    if (row.compensable === 1 && this.#definitions.has(row.definition)) {
      // Completed steps to undo first: an attempt replays the run to its frontier, runs their
      // compensations and settles it cancelled; it starts here, or at the wake set before this answers.
      if (!this.#store.runs.requestCancelDue(runId, reason ?? null, now)) return false;
      this.#runner.requestWake(now);
      this.#runner.start(runId, now);
      await this.#runner.flushWakes();
      return true;
    }
    if (
      !this.#store.settle(runId, null, { state: "cancelled", cancelReason: reason ?? null }, now)
    ) {
      return false;
    }
    this.#runner.emit({
      type: "task:cancelled",
      runId,
      definition: row.definition,
      reason: reason ?? null,
    });
    // What the cancelled run owes other objects (its settlement, its children's cancels) is
    // delivered by the alarm: the wake is set before this answers.
    await this.#runner.flushWakes();
    return true;
  }

  /**
   * Holds a run for an operator: it takes no new attempt and costs no wake until
   * {@link resume}. A pending or parked run is held at once (a wait it was parked on is found
   * again after the resume). A live attempt is not aborted: the step in flight finishes and is
   * journaled, and the attempt holds the run at its next step boundary (before the next step
   * runs, or where it would park); a handler that returns first completes the run. The pause is
   * durable: an attempt that dies before its boundary leaves the run held, not reclaimed.
   *
   * @returns true when the run is held or will be at its next boundary (also when it already
   *   was); false for a settled or unknown run, or one whose cancel is under way.
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  async pause(runId: string): Promise<boolean> {
    checkName(runId, "A run id", false);
    const row = this.#store.runs.getRun(runId);
    if (!row || TERMINAL_STATES.has(row.state) || row.cancel_requested === 1) return false;
    if (row.state === "paused") return true;
    const now = this.#now();
    const active = this.#runner.active.get(runId);
    if (active) {
      if (!this.#store.runs.requestPause(runId, now)) return false;
      active.requestPause(true);
      return true;
    }
    if (!this.#store.pause(runId, now)) return false;
    this.#runner.emit({ type: "task:paused", runId, definition: row.definition, step: null });
    return true;
  }

  /**
   * Lets a held run go on: a paused run becomes due now and its next attempt replays the journal
   * (steps completed before the pause are not run again); a pause not yet taken by a live attempt
   * is withdrawn. The attempt's wake is set before this answers.
   *
   * @returns true when the run was held (or about to be); false otherwise.
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  async resume(runId: string): Promise<boolean> {
    checkName(runId, "A run id", false);
    const row = this.#store.runs.getRun(runId);
    if (!row) return false;
    const now = this.#now();
    if (!this.#store.runs.resume(runId, now)) return false;
    this.#store.log.append(runId, "task:resumed", null, now);
    this.#runner.active.get(runId)?.requestPause(false);
    this.#runner.emit({ type: "task:resumed", runId, definition: row.definition });
    if (row.state === "paused") {
      // Started here, like a run just accepted; the alarm starts it when this cannot (the wake).
      this.#runner.requestWake(now);
      this.#runner.start(runId, now);
    }
    await this.#runner.flushWakes();
    return true;
  }

  /**
   * Runs a run again from one of its journaled steps: the steps journaled before `from` are kept
   * (they are not run again), `from` and every later step are dropped, and the run is due at once;
   * its next attempt replays the kept steps and runs the rest anew. One transaction: the dropped
   * rows are kept with the restart (`restarts(runId)`), the attempt that settled the run (or died
   * holding it) stays in `attempts(runId)`, and the run's settlement, wait, cancel and pause are
   * forgotten. Any run not held by a live attempt can be restarted, a settled one included (a
   * retained one: `retain: false` runs are gone when they complete). Step journals
   * (`step.journal`) are kept whole.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id or options.
   * @throws TasksError `tasks/not-found` for an unknown run, or a step it has not journaled.
   * @throws TasksError `tasks/conflict` while an attempt runs it here (pause it first); for a
   *   settled child run (its parent has its settlement); or when the dropped steps started child
   *   runs in other objects (they cannot be taken back).
   */
  async restart(runId: string, options: TaskRestartOptions): Promise<TaskRestartResult> {
    checkName(runId, "A run id", false);
    if (typeof options !== "object" || options === null || typeof options.from !== "string") {
      throw new TasksError(
        "tasks/invalid-argument",
        'restart() takes { from: <the name of a journaled step> }, e.g. restart(runId, { from: "charge" }).',
      );
    }
    const from = options.from;
    checkName(from, "A step name", false);
    const deadlineMs =
      options.deadlineMs === undefined
        ? null
        : check.ms(options.deadlineMs, "restart() option deadlineMs", 0, { min: 1 });
    const row = this.#store.runs.getRun(runId);
    if (!row) throw noSuchRun(runId);
    if (this.#runner.active.has(runId)) {
      throw new TasksError(
        "tasks/conflict",
        `Run "${runId}" has an attempt running now; pause it (pause(runId)) and restart it once it is paused.`,
      );
    }
    if (TERMINAL_STATES.has(row.state) && this.#store.links.isChild(runId)) {
      throw new TasksError(
        "tasks/conflict",
        `Run "${runId}" is a child run that has settled, and its parent has its settlement; start a new run instead.`,
      );
    }
    const seq = this.#store.steps.seqOf(runId, from);
    if (seq === null) {
      throw new TasksError(
        "tasks/not-found",
        `Run "${runId}" has no journaled step "${from}"; restart from a step that steps(runId) lists.`,
      );
    }
    const undone = this.#store.steps.undoneBefore(runId, seq);
    if (undone !== null) {
      throw new TasksError(
        "tasks/conflict",
        `Step "${undone}" of run "${runId}" was undone by its compensation, so it cannot be kept as done; restart from "${undone}" or an earlier step.`,
      );
    }
    if (this.#store.children.startedFrom(runId, seq) > 0) {
      throw new TasksError(
        "tasks/conflict",
        `Steps of run "${runId}" from "${from}" on started child runs in other objects, which a restart cannot take back; restart from a step after them.`,
      );
    }
    const now = this.#now();
    const deadlineAt = deadlineMs === null ? null : now + deadlineMs;
    const flowKey = row.flow_key ?? null;
    let queued = false;
    const done = this.#store.restart(row, from, seq, deadlineAt, now, () => {
      // A settled run of a flow-controlled definition takes a slot again, or waits for one.
      if (flowKey !== null && TERMINAL_STATES.has(row.state)) {
        queued = this.#flow.readmit(runId, row.definition, flowKey, now);
        if (queued) this.#store.log.append(runId, "task:queued", { reason: "concurrency" }, now);
      }
    });
    this.#runner.emit({
      type: "task:restarted",
      runId,
      definition: row.definition,
      from,
      ...done,
    });
    // Started here, like a resumed run; the alarm starts it when this cannot (the wake).
    this.#runner.requestWake(now);
    this.#runner.start(runId, now);
    await this.#runner.flushWakes();
    return done;
  }

  /**
   * A run's restarts in order, each with the journal rows it dropped; `null` for an unknown run.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  restarts(runId: string): TaskRestartSnapshot[] | null {
    checkName(runId, "A run id", false);
    if (!this.#store.runs.hasRun(runId)) return null;
    const now = this.#now();
    return this.#store.restarts.list(runId).map((record) => ({
      restart: record.restart,
      from: record.from_step,
      at: record.at,
      attempt: record.attempt,
      state: record.state,
      steps: toStepSnapshots(record.steps, now),
    }));
  }

  /**
   * Deletes settled runs with their journals and buffered events, oldest settled first.
   *
   * @returns how many runs were deleted.
   * @throws TasksError `tasks/invalid-argument` for a non-terminal state, a bad `settledBefore` or a bad limit.
   */
  delete(options: TaskDeleteOptions = {}): number {
    checkOptions(options, "delete() options");
    const states = options.state ?? ["completed", "failed", "cancelled"];
    if (!Array.isArray(states)) {
      throw new TasksError(
        "tasks/invalid-argument",
        `delete() state must be an array of settled states; got ${String(states)}.`,
      );
    }
    for (const state of states) {
      if (!TERMINAL_STATES.has(state)) {
        throw new TasksError(
          "tasks/invalid-argument",
          `delete() removes settled runs only; "${state}" is not completed, failed or cancelled. Cancel a live run first.`,
        );
      }
    }
    const limit = check.count(options.limit, "limit", DEFAULT_PAGE, { max: MAX_PAGE });
    const before = options.settledBefore;
    const beforeMs = before instanceof Date ? before.getTime() : before;
    if (beforeMs !== undefined && (typeof beforeMs !== "number" || Number.isNaN(beforeMs))) {
      throw new TasksError(
        "tasks/invalid-argument",
        `delete() settledBefore must be a Date or epoch milliseconds; got ${String(before)}.`,
      );
    }
    if (states.length === 0) return 0;
    const rows = this.#store.runs.settledRuns(states, beforeMs ?? null, limit);
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
   * @throws TasksError `tasks/invalid-argument` (run id or type), `tasks/not-found` (no such run),
   *   `tasks/closed` (the run is settled), `tasks/unserializable` / `tasks/too-large` /
   *   `tasks/too-deep` (payload).
   */
  async sendEvent(runId: string, type: string, payload?: unknown): Promise<TaskSendEventResult> {
    checkName(runId, "A run id", false);
    // The `__dk` prefix is the engine's own (the waits of `awaitChildren`).
    checkName(type, "An event type");
    const row = this.#store.runs.getRun(runId);
    if (!row) throw noSuchRun(runId);
    if (TERMINAL_STATES.has(row.state)) {
      throw new TasksError(
        "tasks/closed",
        `Run "${runId}" is already ${row.state}; it takes no more events.`,
      );
    }
    const text = encodeValue(payload, this.#maxValueBytes, "payload");
    const now = this.#now();
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

  // ── The alarm (AlarmPart) ──

  /**
   * Applies a message another object's `Tasks` sent about child runs: a start, a child's settlement,
   * a cancel, or a batch of them. Every message must prove it belongs to the exchange it names
   * (its key and secret); one that does not is refused (`tasks/forbidden`) and changes nothing. Expose it as the object's RPC method `receiveTasks` (one line:
   * `receiveTasks(message: unknown) { return this.tasks.receive(message); }`); it is how parents and
   * children reach each other. It never throws: a malformed message, or one this object refuses,
   * is answered `{ ok: false, code, message }`, and a duplicate is acknowledged as the first was.
   *
   * @returns the reply the sending object reads.
   */
  async receive(message: unknown): Promise<TaskChildReply> {
    const children = this.#children;
    if (children === null) {
      return refusal(
        "tasks/invalid-argument",
        'This object\'s Tasks has no children option: construct it with { children: { namespaces: env, self: "<its binding>" } }.',
      );
    }
    const reply = await children.receive(message);
    // A wake it asked for (a parent made due, a settlement queued) is set before it answers.
    await this.#runner.flushWakes();
    return reply;
  }

  /** The earliest time a run needs a wake, or a message to another object is due (epoch ms); `null` when none does. */
  nextWakeAt(): number | null {
    return earliest([
      this.#store.runs.nextWakeAt(),
      this.#store.flows.nextWakeAt(),
      this.#schedules.nextWakeAt(),
      this.#children?.nextWakeAt() ?? null,
    ]);
  }

  /**
   * The engine's share of the object's alarm: starts an attempt for every due run (the claim
   * backstop reclaims runs whose attempt died), extends the claims of attempts still alive in this
   * isolate, and waits up to 10 s for the attempts it started. Safe to call when nothing is due.
   */
  async alarm(): Promise<void> {
    const now = this.#now();
    this.#moveQueues(now);
    this.#takeTicks(now);
    const children = this.#children;
    if (children === null) {
      await this.#runner.alarm();
      return;
    }
    await Promise.all([this.#runner.alarm(), children.deliverDue()]);
  }

  /**
   * The flow keys whose wake came (a rate slot freed, or a window passed): their queued runs take
   * the slots free now, each key in one transaction.
   */
  #moveQueues(now: number): void {
    for (const { definition, flow_key: key } of this.#store.flows.due(now, 100)) {
      const dequeued = this.#store.transaction(() => this.#flow.pump(definition, key, now));
      this.#dequeued(dequeued, now, true);
    }
  }

  /**
   * The due ticks of the schedules: each schedule's pass is one transaction (its ticks' runs and
   * its next tick); the runs start once it committed.
   */
  #takeTicks(now: number): void {
    const passes = this.#schedules.tick(now, (pass) => {
      this.#ticked = [];
      const done = this.#store.transaction(pass);
      this.#announceTicks();
      return done;
    });
    for (const pass of passes) this.#runner.emit({ type: "task:schedule:ticked", ...pass });
  }

  /** Moves a queued run to `pending`, due at `now`, with its log row; false if it was not queued. */
  #dequeueRun(runId: string, now: number): boolean {
    if (!this.#store.runs.dequeue(runId, now)) return false;
    this.#store.log.append(runId, "task:dequeued", null, now);
    return true;
  }

  /**
   * Lets go the queued runs of definitions that no longer have flow control (a deploy removed
   * it): nothing would move their queues again. One probe of the state index, then (only when a
   * run is queued) one of the definition index per such definition; runs of a definition that is
   * gone stay queued (they could not run) until cancelled or deleted.
   */
  #releaseUnruled(definitions: ReadonlyMap<string, ResolvedDefinition>): void {
    // One probe of the state index first: an object with no queued run (the usual case) reads no more.
    if (!this.#store.runs.hasQueued()) return;
    const now = this.#now();
    for (const definition of definitions.values()) {
      if (definition.flow !== null) continue;
      const queued = this.#store.runs.queuedOf(definition.name, 1_000);
      if (queued.length === 0) continue;
      const released = this.#store.transaction(() =>
        queued.filter((runId) => this.#dequeueRun(runId, now)),
      );
      this.#dequeued(released, now);
    }
  }

  /** One tick's run, accepted in its schedule's pass (see {@link Schedules}). */
  #acceptTick(run: ScheduledRun): void {
    const definition = this.#definitions.get(run.definition) as ResolvedDefinition;
    const flowKey =
      definition.flow !== null
        ? this.#flow.keyOf(definition, decodeValue(run.input))
        : run.overlap === "queue"
          ? `${SCHEDULE_LANE_PREFIX}${run.scheduleId}`
          : null;
    const now = this.#now();
    const row: NewRun = {
      runId: run.runId,
      definition: run.definition,
      input: run.input,
      metadata: encodeValue(
        { schedule: run.scheduleId, tickAt: run.tickAt },
        this.#maxValueBytes,
        "metadata",
      ),
      key: null,
      retain: true,
      trace: null,
      flowKey,
      priority: definition.priority,
      now,
    };
    const placed = this.#place(row, null, false);
    this.#ticked.push({ row, placed });
  }

  /** Announces (and starts) the runs a schedule pass accepted, once its transaction committed. */
  #announceTicks(): void {
    const ticked = this.#ticked;
    this.#ticked = [];
    for (const { row, placed } of ticked) this.#announce(row, placed);
  }

  /**
   * Recovery on the next wake. A Durable Object has one live instance: when this is the first
   * `Tasks` of a new instance, every claim on disk was held by an instance that is gone, so its
   * runs are made due now and the alarm reclaims them in a moment (the claim path, with a new
   * generation fencing out anything the dead attempt could still write), instead of at their claim
   * deadline. The messages it owes other objects (child runs' starts and settlements) are made
   * due now too: a delivery the gone instance had in flight holds a lease (its back-off) that no
   * answer will end. Nothing else runs here: the attempts start from the alarm, after the host's
   * constructor has composed its parts. A second `Tasks` over the same storage in one instance
   * recovers nothing (the first one's attempts may be alive).
   */
  #recoverOrphans(storage: DurableObjectStorage): void {
    if (constructed.has(storage)) return;
    constructed.add(storage);
    const now = this.#now();
    const runs = this.#store.runs.recoverOrphans(now);
    const deliveries = this.#store.outbox.recoverLeases(now);
    if (runs + deliveries > 0) this.#runner.requestWake(now);
  }

  /** The child runs of the `children` option, with what they need of this engine. */
  #childRuns(ctx: DurableObjectState, options: TasksOptions<Definitions>): ChildRuns | null {
    const given = options.children;
    if (given === undefined) return null;
    checkOptions(given, "new Tasks(ctx, options): children");
    if (typeof given.namespaces !== "object" || given.namespaces === null) {
      throw new TasksError(
        "tasks/invalid-argument",
        "children.namespaces must be an object of Durable Object namespaces by binding name: pass env.",
      );
    }
    checkName(given.self, "children.self", false);
    const deliveryTimeoutMs = check.ms(
      given.deliveryTimeoutMs,
      "children.deliveryTimeoutMs",
      DEFAULT_DELIVERY_TIMEOUT_MS,
      { min: 1 },
    );
    const store = this.#store;
    const runner = this.#runner;
    return new ChildRuns(
      {
        store,
        ctx,
        maxValueBytes: this.#maxValueBytes,
        listening: options.onEvent !== undefined,
        now: this.#now,
        emit: runner.emit,
        requestWake: (at) => runner.requestWake(at),
        startRun: (runId, now) => {
          runner.start(runId, now);
        },
        accept: (definition, inputText, link) => this.#acceptChild(definition, inputText, link),
        cancel: (runId, reason) => this.cancel(runId, reason),
      },
      given,
      deliveryTimeoutMs,
    );
  }

  #assertDefinition(name: string): void {
    checkName(name, "A definition name");
    if (!this.#definitions.has(name)) {
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

/** Longest trigger source name. */
const MAX_SOURCE = 200;

/** A `trigger()` batch, checked: a source name and two positions with `from < to`. */
function checkBatch(batch: unknown): TaskTriggerBatch {
  const { source, from, to } = (batch ?? {}) as Partial<TaskTriggerBatch>;
  if (typeof source !== "string" || source.length === 0 || source.length > MAX_SOURCE) {
    throw new TasksError(
      "tasks/invalid-argument",
      `trigger() takes a batch { source, from, to } whose source is a string of 1–${MAX_SOURCE} characters.`,
    );
  }
  checkName(source, "A trigger source", false);
  if (
    !Number.isSafeInteger(from) ||
    !Number.isSafeInteger(to) ||
    (from as number) < 0 ||
    (to as number) <= (from as number)
  ) {
    throw new TasksError(
      "tasks/invalid-argument",
      `A trigger batch's from and to are integers with 0 ≤ from < to; got from ${String(from)}, to ${String(to)}.`,
    );
  }
  return { source, from: from as number, to: to as number };
}
