import {
  type AlarmPart,
  claimPart,
  createEmitter,
  requestWake,
  utf8ByteLength,
} from "@durablekit/compose";
import {
  decode,
  type JournalEntry,
  type JournalPort,
  JournalReader,
  JournalStore,
} from "@durablekit/handle-journal";
import type { BridgeAccess, BridgeInterruptPolicy } from "../context";
import { BridgeError, fromJournalFailure } from "../errors";
import type { BridgeEvent } from "../events";
import { type BridgeLimits, resolveLimits } from "../limits";
import { ModuleRegistry } from "../modules/module-registry";
import { type BridgeCallRecord, describeCalls } from "../replay/call-records";
import { fingerprintChange } from "../replay/fingerprint";
import { resumedBody } from "../replay/journal-format";
import type { BridgeRecording, BridgeReplayRecordingOptions } from "../replay/recording";
import { encodeChecked } from "../values/data-size";
import { checkAnswerable } from "../values/values";
import { Attempts, type Drive, type ReplayDrive } from "./attempts";
import {
  type BridgeExecution,
  type BridgeExecutionPage,
  type BridgeExecutionRecord,
  type BridgeListOptions,
  EXECUTION_STATES,
} from "./execution";
import { errorBody, fingerprintError } from "./execution-errors";
import { ExecutionStore, type RunningExecution, type StoredExecution } from "./execution-store";
import {
  type BridgeExecuteOptions,
  type BridgeResumeOptions,
  check,
  checkAccess,
  checkExecuteOptions,
  checkExecutorOptions,
  checkJournal,
  checkPolicy,
  DEFAULT_COMPATIBILITY_DATE,
  type ExecutorOptions,
} from "./executor-options";
import { type RecoveryPlan, RecoveryPlanner } from "./recovery";

/** Checks the shape of a recording given to `replayRecording`; what is inside is checked as a journal is. */
function checkRecording(recording: BridgeRecording): void {
  const r = recording as Partial<BridgeRecording> | null;
  if (
    typeof r !== "object" ||
    r === null ||
    typeof r.executionId !== "string" ||
    typeof r.source !== "string" ||
    typeof r.input !== "string" ||
    typeof r.seed !== "string" ||
    typeof r.startedAt !== "number" ||
    !Number.isFinite(r.startedAt) ||
    !Array.isArray(r.calls)
  ) {
    throw invalid(
      "replayRecording takes a recording: { executionId, source, input, seed, startedAt, calls }, as recording(id) answers it.",
    );
  }
}

/** A new seed for a replay run's isolate: 32 random bytes as 64 hex characters. */
function newSeed(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** How long after a run's timeout the recovery alarm is asked for. */
const ALARM_GRACE_MS = 1_000;
/** Storages an `Executor` was built over in this isolate: the first one of an instance recovers. */
const constructed = new WeakSet<DurableObjectStorage>();

/** The reason of an execution cancelled by its `execute()` signal. */
const ABORTED = "the execute() signal aborted";

function invalid(message: string): BridgeError {
  return new BridgeError("bridge/invalid-argument", message);
}

/**
 * Runs program source in Worker Loader isolates against host modules, one bridge per run. Create
 * one per Durable Object, in its constructor: it owns the object's `dk_bridge_*` tables, records
 * every execution there, and asks for the wake that recovers executions an eviction cut off
 * through `requestWake` (share the alarm with `Alarms` from `@durablekit/compose`).
 */
export class Executor implements AlarmPart {
  readonly #ctx: DurableObjectState;
  readonly #registry: ModuleRegistry;
  readonly #limits: BridgeLimits;
  readonly #store: ExecutionStore;
  /** Decides whether an execution no attempt of this instance runs may run again. */
  readonly #planner: RecoveryPlanner;
  /** Runs the attempts; a running row it does not run was left by a previous instance. */
  readonly #attempts: Attempts;
  readonly #access: BridgeAccess;
  readonly #onInterrupt: BridgeInterruptPolicy;
  readonly #now: () => number;
  readonly #emit: (event: BridgeEvent) => void;
  /** The journal replay runs write to: the `journal` option, else a JournalStore made at first use. */
  #journal: JournalPort | undefined;

  /**
   * Checks the modules (specifiers, export names), limits and options, and creates or checks the
   * `dk_bridge_*` tables in `ctx.storage`.
   * @throws BridgeError `bridge/invalid-argument` for a malformed option, `bridge/invalid-module`
   *   for a malformed module, `bridge/schema-too-new` when the tables were written by a newer version.
   * @throws {BridgeError} `bridge/conflict` when the object already has a Executor: construct parts once, in the constructor.
   */
  constructor(ctx: DurableObjectState, options: ExecutorOptions) {
    check.ctx(ctx, "new Executor(ctx, { loader, modules })");
    checkExecutorOptions(options);
    this.#ctx = ctx;
    const compatibilityDate = options.compatibilityDate ?? DEFAULT_COMPATIBILITY_DATE;
    const compatibilityFlags = options.compatibilityFlags ?? [];
    this.#registry = new ModuleRegistry(options.modules);
    this.#limits = resolveLimits(options.limits);
    this.#access = checkAccess(options.access ?? "read-write");
    this.#onInterrupt = checkPolicy(options.onInterrupt ?? "fail");
    this.#now = options.now ?? Date.now;
    this.#emit = createEmitter("@durablekit/rpc-bridge", options.onEvent);
    this.#store = new ExecutionStore(ctx.storage);
    this.#planner = new RecoveryPlanner({
      registry: this.#registry,
      limits: this.#limits,
      compatibilityDate,
      compatibilityFlags,
    });
    this.#attempts = new Attempts({
      loader: options.loader,
      compatibilityDate,
      compatibilityFlags,
      limits: this.#limits,
      registry: this.#registry,
      store: this.#store,
      planner: this.#planner,
      now: this.#now,
      emit: this.#emit,
      runEmit: options.onEvent === undefined ? undefined : this.#emit,
    });
    this.#journal = options.journal;
    claimPart(ctx, {
      part: "Executor",
      construct: "this.executor = new Executor(ctx, { loader: env.LOADER, modules })",
      breaks:
        "cannot see the first one's executions in flight: it would recover them as dead while they run",
      conflict: (message) => new BridgeError("bridge/conflict", message),
    });
    this.#recoverOnNextWake(ctx.storage);
  }

  /**
   * Recovery on the next wake. A Durable Object has one live instance, so when this is the first
   * `Executor` of a new instance, an execution on disk as running was cut off with the instance
   * that ran it: the wake that recovers it is asked for now, instead of at the gone run's timeout
   * (`runTimeoutMs` and a second). Nothing runs here; the alarm recovers, after the host's
   * constructor composed its parts. One indexed read (`state`), at most one row.
   */
  #recoverOnNextWake(storage: DurableObjectStorage): void {
    if (constructed.has(storage)) return;
    constructed.add(storage);
    if (!this.#store.hasOrphans()) return;
    requestWake(this.#ctx, this.#now()).catch(() => {
      // A failed alarm write leaves recovery to the alarm the gone instance asked for.
    });
  }

  /** The executor's own journal (created, with its tables, when a replay run first needs it). */
  #ownJournal(): JournalPort {
    this.#journal ??= new JournalStore(this.#ctx);
    return this.#journal;
  }

  /** The limits every run gets. */
  get limits(): Readonly<BridgeLimits> {
    return this.#limits;
  }

  /** Ids of the executions running in this instance now. */
  get running(): string[] {
    return this.#attempts.running();
  }

  // ── Executions ─────────────────────────────────────────────────────────────

  /**
   * Runs `source` (an ES module whose default export takes `input`) to its end and answers how it
   * ended. A program that cannot run (bad import, no default export, input over the limit) is
   * refused with a thrown error before anything runs or is recorded.
   *
   * With `onInterrupt: "replay"` every call is journaled, and the run can be released by
   * `ctx.interrupt()` (it then resolves `{ state: "interrupted", interrupt }`; see {@link resume})
   * and survives restarts: recovery replays it from the top, answering journaled calls from the
   * journal. With `options.journal` and an `id` that exists, it re-attaches to that execution
   * instead of refusing (see `BridgeExecuteOptions.journal`).
   * @throws BridgeError `bridge/not-found` (a module the program imports), `bridge/module-private`,
   * `bridge/invalid-program`, `bridge/too-large` (`limit` `maxInputBytes`), `bridge/unserializable`, `bridge/conflict` (the id exists),
   * `bridge/invalid-argument`.
   */
  async execute(
    source: string,
    input?: unknown,
    options: BridgeExecuteOptions = {},
  ): Promise<BridgeExecution> {
    checkExecuteOptions(options);
    const onInterrupt = checkPolicy(options.onInterrupt ?? this.#onInterrupt);
    const access = checkAccess(options.access ?? this.#access);
    const given = options.journal;
    if (given !== undefined && onInterrupt !== "replay") {
      throw invalid('execute\'s journal option is for onInterrupt "replay" runs only.');
    }
    if (given !== undefined && options.id !== undefined) {
      const existing = this.#store.row(options.id);
      if (existing !== null) return this.#reattach(existing, given);
    }
    if (typeof source !== "string") {
      throw new BridgeError("bridge/invalid-program", "The program source must be a string.");
    }
    if (utf8ByteLength(source) > this.#limits.maxSourceBytes) {
      throw new BridgeError(
        "bridge/invalid-program",
        `The program is larger than ${this.#limits.maxSourceBytes} bytes (maxSourceBytes).`,
      );
    }
    const modules = this.#registry.graph(source);
    const inputText = encodeChecked(input, this.#limits.maxInputBytes, "input", "maxInputBytes");
    const id = options.id ?? crypto.randomUUID();
    if (this.#attempts.isLive(id) || this.#store.has(id)) {
      throw new BridgeError(
        "bridge/conflict",
        `An execution with id "${id}" already exists; use another id or read it with get().`,
      );
    }
    const now = this.#now();
    let replay: ReplayDrive | undefined;
    let fingerprint: string | undefined;
    if (onInterrupt === "replay") {
      replay = { port: given ?? this.#ownJournal(), seed: newSeed(), startedAt: now, entries: [] };
      fingerprint = JSON.stringify(this.#planner.fingerprint(source));
    }
    // Recorded running before anything runs: a restart finds the row and recovers it.
    this.#store.insert({
      id,
      onInterrupt,
      access,
      source,
      input: inputText,
      now,
      ...(replay === undefined
        ? {}
        : { seed: replay.seed, fingerprint, externalJournal: given !== undefined }),
    });
    this.#requestRecoveryWake(now);
    const signal = options.signal;
    if (signal?.aborted) {
      // Aborted before it started: recorded, and cancelled without running.
      return this.#attempts.end(id, 1, 0, {
        state: "cancelled",
        error: errorBody("bridge/cancelled", `The run was cancelled: ${ABORTED}.`),
      });
    }
    const onAbort = () => this.cancel(id, ABORTED);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.#attempts.drive({
        id,
        modules,
        input,
        access,
        onInterrupt,
        attempt: 1,
        ...(replay === undefined ? {} : { replay }),
      });
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Resumes a replay run released by `ctx.interrupt()`: the interrupt's journal entry is resolved
   * to `value` and the run replays from the top, where the interrupted call answers the program
   * with `value` without its host code running again. Resolves how the run ends (or is
   * interrupted again), like `execute`.
   * @throws BridgeError `bridge/not-found` (no such execution), `bridge/conflict` (not
   *   interrupted: running, ended, or already resumed; or its journal refused the value),
   *   `bridge/too-large` (`limit` `maxInputBytes`) or `bridge/unserializable` (`value` is not data within
   *   `maxInputBytes`, or data a call cannot be answered with, such as an object using the
   *   bridge's reserved key), `bridge/invalid-argument`. A refused value leaves the run
   *   interrupted, to be resumed with another.
   */
  async resume(
    executionId: string,
    value?: unknown,
    options: BridgeResumeOptions = {},
  ): Promise<BridgeExecution> {
    if (typeof executionId !== "string") throw invalid("resume takes an execution id (a string).");
    if (typeof options !== "object" || options === null) {
      throw invalid("resume takes an options object as its third argument: { journal? }.");
    }
    const given = checkJournal(options.journal);
    const row = this.#store.row(executionId);
    if (row === null) {
      throw new BridgeError("bridge/not-found", `No execution has id "${executionId}".`);
    }
    if (
      row.state !== "interrupted" ||
      row.interruptKey === null ||
      this.#attempts.isLive(executionId)
    ) {
      throw new BridgeError(
        "bridge/conflict",
        `BridgeExecution "${executionId}" is ${row.state}, not interrupted; only an interrupted replay run can be resumed, once per interrupt.`,
      );
    }
    const valueText = encodeChecked(value, this.#limits.maxInputBytes, "value", "maxInputBytes");
    // The value as the replay will read it back and answer the program with: refused now, while
    // the run is still interrupted, rather than failing the replay.
    checkAnswerable(decode(valueText), "value");
    if (row.externalJournal && given === undefined) {
      throw invalid(
        `BridgeExecution "${executionId}" journals to the journal given to execute; pass the same one: resume(id, value, { journal }).`,
      );
    }
    const port = given ?? this.#ownJournal();
    const key = row.interruptKey;
    const changed = fingerprintChange(row.fingerprint, this.#planner.fingerprint(row.source));
    let entries: readonly JournalEntry[];
    try {
      entries = port.lookup(executionId);
    } catch (error) {
      throw fromJournalFailure(error);
    }
    const entry = entries.find((e) => e.key === key && e.outcome === "interrupt");
    // Running first, then the entry resolved: a crash between leaves a running run whose replay
    // meets the unresolved interrupt and is released again, so a resume is never lost twice.
    if (!this.#store.resume(executionId, row.attempt + 1, -1)) {
      throw new BridgeError(
        "bridge/conflict",
        `BridgeExecution "${executionId}" was resumed already.`,
      );
    }
    if (changed !== null) {
      return this.#attempts.end(executionId, row.attempt + 1, 0, {
        state: "failed",
        error: fingerprintError(changed),
      });
    }
    this.#requestRecoveryWake(this.#now());
    let resumed = entries;
    if (entry !== undefined) {
      const payload = resumedBody(entry, value);
      const at = this.#now();
      let taken: boolean;
      try {
        taken = port.resolve(executionId, key, "value", payload, at);
      } catch (error) {
        // Running, with its interrupt unresolved: recovery releases it again at the same key.
        throw fromJournalFailure(error);
      }
      if (!taken) {
        // The journal no longer holds the interrupt as pending (another writer answered it): the
        // value was not recorded, so it is not delivered. The run is left to recovery, whose
        // replay meets what the journal holds.
        throw new BridgeError(
          "bridge/conflict",
          `BridgeExecution "${executionId}": its journal did not take the resume value (the interrupt at call ${key} is no longer pending there); the value was not used.`,
        );
      }
      // The attempt replays from the entries read above, the interrupt resolved: one read in all.
      resumed = entries.map((e) =>
        e === entry ? { ...e, outcome: "value" as const, payload, recordedAt: at } : e,
      );
    }
    const plan = this.#planner.reload(row, resumed);
    if (plan.action === "fail") {
      return this.#attempts.end(executionId, row.attempt + 1, 0, {
        state: "failed",
        error: plan.error,
      });
    }
    return this.#attempts.drive(this.#driveOf(row, plan, row.attempt + 1, port));
  }

  /**
   * `execute` with a journal and an id that exists: a running execution not live here is driven
   * now; an interrupted or ended one is returned as stored.
   */
  async #reattach(row: StoredExecution, port: JournalPort): Promise<BridgeExecution> {
    if (row.onInterrupt !== "replay") {
      throw new BridgeError(
        "bridge/conflict",
        `An execution with id "${row.id}" exists and is not a replay run; use another id.`,
      );
    }
    if (row.state !== "running" || this.#attempts.isLive(row.id)) {
      const record = this.#store.get(row.id) as BridgeExecutionRecord;
      const { executionId, state, result, error, interrupt } = record;
      return {
        executionId,
        state,
        ...(result === undefined ? {} : { result }),
        ...(error === undefined ? {} : { error }),
        ...(interrupt === undefined ? {} : { interrupt }),
      };
    }
    return this.#carryOut(row, this.#planner.planReplay(row, port), port);
  }

  /**
   * Carries out a plan for a stored run no attempt of this instance runs (re-attach, recovery): it
   * ends failed, or is recorded restarted (with the size of the journal it replays from) and runs
   * again from the top. `port` is a replay run's journal, null for any other run.
   */
  #carryOut(
    row: RunningExecution,
    plan: RecoveryPlan,
    port: JournalPort | null,
  ): BridgeExecution | Promise<BridgeExecution> {
    if (plan.action === "fail") {
      return this.#attempts.end(row.id, row.attempt, 0, { state: "failed", error: plan.error });
    }
    this.#store.restart(row.id, row.attempt + 1, plan.entries.length);
    this.#requestRecoveryWake(this.#now());
    return this.#attempts.drive(this.#driveOf(row, plan, row.attempt + 1, port));
  }

  /** The drive of a stored run's next attempt; `port` is a replay run's journal, null for any other. */
  #driveOf(
    row: RunningExecution,
    plan: Extract<RecoveryPlan, { action: "restart" }>,
    attempt: number,
    port: JournalPort | null,
  ): Drive {
    return {
      id: row.id,
      modules: plan.modules,
      input: plan.input,
      access: row.access,
      // The policy stored with the execution, never a default: recovery dispatches on it.
      onInterrupt: row.onInterrupt,
      attempt,
      ...(port === null
        ? {}
        : {
            replay: { port, seed: row.seed ?? "", startedAt: row.startedAt, entries: plan.entries },
          }),
    };
  }

  /**
   * The stored record of an execution, or `null` when there is none.
   * @throws BridgeError `bridge/invalid-argument` when `executionId` is not a string.
   */
  get(executionId: string): BridgeExecutionRecord | null {
    if (typeof executionId !== "string") throw invalid("get takes an execution id (a string).");
    return this.#store.get(executionId);
  }

  /**
   * The calls an execution's journal holds, decoded for reading ({@link BridgeCallRecord}: key,
   * module, method, outcome, coded error, sizes, the kinds of objects returned), in recorded order;
   * `[]` when it holds none (or, with no `journal` given, is no replay run on this executor's own
   * journal). Reads the executor's own journal, or `journal` — the port the execution
   * was given (a task's `step.journal(name)`, or any `{ lookup }` over entries read elsewhere, such
   * as `Tasks.journals()`). Writes nothing and revives nothing.
   * @throws BridgeError `bridge/invalid-argument` when `executionId` is not a string or `journal`
   *   has no `lookup`.
   */
  calls(
    executionId: string,
    options: { journal?: Pick<JournalPort, "lookup"> } = {},
  ): BridgeCallRecord[] {
    if (typeof executionId !== "string") throw invalid("calls takes an execution id (a string).");
    return describeCalls(this.#lookupCalls(executionId, options?.journal, "calls"));
  }

  /**
   * A replay run as a test replays it ({@link BridgeRecording}): its source, input, seed, start
   * time and journal entries, read from the executor's own journal or `journal` (the port the
   * execution was given). `null` when there is no such execution, or it is not a replay run.
   * Writes nothing.
   * @throws BridgeError `bridge/invalid-argument` when `executionId` is not a string or `journal`
   *   has no `lookup`.
   */
  recording(
    executionId: string,
    options: { journal?: Pick<JournalPort, "lookup"> } = {},
  ): BridgeRecording | null {
    if (typeof executionId !== "string") {
      throw invalid("recording takes an execution id (a string).");
    }
    const row = this.#store.row(executionId);
    if (row === null || row.onInterrupt !== "replay") return null;
    const calls = this.#lookupCalls(executionId, options?.journal, "recording");
    return {
      executionId,
      source: row.source,
      input: row.input,
      seed: row.seed ?? "",
      startedAt: row.startedAt,
      calls: [...calls],
    };
  }

  /**
   * The journal entries of an execution: from `given` (the port it was given), else from the
   * executor's own journal when it is a replay run on it, else none. A read runs nothing but
   * SELECT: an instance that has not opened its own journal yet (a new one, after a restart) reads
   * it through a reader that never creates or migrates a table, and nothing is asked of the
   * journal for a run without one.
   */
  #lookupCalls(
    executionId: string,
    given: Pick<JournalPort, "lookup"> | undefined,
    method: "calls" | "recording",
  ): readonly JournalEntry[] {
    if (given !== undefined && typeof given?.lookup !== "function") {
      throw invalid(
        `${method}(executionId, { journal }): journal must have a lookup(executionId) method.`,
      );
    }
    if (given === undefined && !this.#store.ownsJournal(executionId)) return [];
    const journal = given ?? this.#journal ?? new JournalReader(this.#ctx.storage);
    return journal.lookup(executionId);
  }

  /**
   * Replays a program against a recording ({@link recording}), as recovery would replay it, and
   * answers how it ended. The program (`options.source`, or the recorded one) runs in a fresh
   * isolate with the recorded seed and clock; every call the recording holds is answered from it,
   * in order, and no host function runs. It ends as the run would:
   * - `completed` / `failed` with the program's own result or error;
   * - `failed` with `bridge/diverged` where it makes a call other than the recorded one, or ends
   *   leaving recorded calls unasked;
   * - `failed` with `bridge/frontier` at the first call the recording does not hold (new ground:
   *   a replay calls nothing live);
   * - `interrupted` at a recorded `ctx.interrupt()` nobody resumed.
   *
   * It runs under a scratch execution id that is deleted before this returns, and writes no
   * journal entry; the recording is not changed. For tests: `@durablekit/testing`'s
   * `replayProgram` reports on it.
   * @throws BridgeError `bridge/invalid-argument` for a malformed recording; what `execute` throws
   *   for a program that cannot run.
   */
  async replayRecording(
    recording: BridgeRecording,
    options: BridgeReplayRecordingOptions = {},
  ): Promise<BridgeExecution> {
    checkRecording(recording);
    const source = options?.source ?? recording.source;
    if (typeof source !== "string") {
      throw new BridgeError("bridge/invalid-program", "The program source must be a string.");
    }
    const modules = this.#registry.graph(source);
    const input = decode(recording.input);
    const entries = recording.calls;
    const port: JournalPort = {
      lookup: () => entries,
      record: () => {
        throw new BridgeError("bridge/frontier", "A replay of a recording records nothing.");
      },
      resolve: () => {
        throw new BridgeError("bridge/frontier", "A replay of a recording records nothing.");
      },
    };
    const id = `replay:${crypto.randomUUID()}`;
    this.#store.insert({
      id,
      onInterrupt: "replay",
      access: this.#access,
      source,
      input: recording.input,
      now: recording.startedAt,
      seed: recording.seed,
      externalJournal: true,
    });
    try {
      const execution = await this.#attempts.drive({
        id,
        modules,
        input,
        access: this.#access,
        onInterrupt: "replay",
        attempt: 1,
        replay: {
          port,
          seed: recording.seed,
          startedAt: recording.startedAt,
          entries,
          refuseLive: true,
        },
      });
      return { ...execution, executionId: recording.executionId };
    } finally {
      this.#store.remove(id);
    }
  }

  /**
   * One page of the executions this executor recorded, newest first, by `state`: `{ items, next }`.
   * Pass `next` back as `cursor` for the following page (`null` on the last). One page of the
   * `(created_at, id)` index; nothing written.
   * @throws BridgeError `bridge/invalid-argument` for a bad state, `limit` (1–1000, default 50) or
   *   `cursor`.
   */
  list(options: BridgeListOptions = {}): BridgeExecutionPage {
    check.options(options, "list(options)");
    const limit = check.count(options.limit, "limit", 50, { max: 1000 });
    const states = options.state === undefined ? [] : [options.state].flat();
    for (const state of states) {
      if (!EXECUTION_STATES.includes(state)) {
        throw invalid(
          `list() state must be one of ${EXECUTION_STATES.join(", ")}; got ${JSON.stringify(state)}.`,
        );
      }
    }
    let after: { createdAt: number; id: string } | undefined;
    if (options.cursor !== undefined) {
      const match =
        typeof options.cursor === "string" ? /^(\d+):(.+)$/s.exec(options.cursor) : null;
      if (match === null) {
        throw invalid(
          "list() cursor is not a token list() returned; pass the `next` of the previous page.",
        );
      }
      after = { createdAt: Number(match[1]), id: match[2] as string };
    }
    const rows = this.#store.list({ states, limit: limit + 1, after });
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    return {
      items,
      next: rows.length > limit && last ? `${last.createdAt}:${last.executionId}` : null,
    };
  }

  /**
   * Cancels a running execution of this instance; false when none is running under that id.
   * @throws BridgeError `bridge/invalid-argument` when `executionId` or `reason` is not a string.
   */
  cancel(executionId: string, reason = "cancelled"): boolean {
    if (typeof executionId !== "string" || typeof reason !== "string") {
      throw invalid("cancel takes an execution id and an optional reason, both strings.");
    }
    return this.#attempts.cancel(executionId, reason);
  }

  /**
   * Deletes the records of executions that ended before `before` (epoch ms); returns how many.
   * @throws BridgeError `bridge/invalid-argument` when `before` is not a finite number.
   */
  prune(before: number): number {
    if (typeof before !== "number" || !Number.isFinite(before)) {
      throw invalid(`prune takes a time in epoch milliseconds; got ${String(before)}.`);
    }
    const { deleted, journals } = this.#store.prune(before);
    // A pruned replay run's own journal goes with it (a journal given to execute is its owner's).
    if (journals.length > 0) {
      const port = this.#ownJournal();
      for (const id of journals) port.deleteExecution?.(id);
    }
    return deleted;
  }

  // ── Recovery (the alarm part) ──────────────────────────────────────────────

  /**
   * Settles executions a previous instance left running (its Durable Object restarted under them):
   * `"fail"` ones fail with `bridge/interrupted`; `"restart"` ones run again from the top (a new
   * attempt), unless a call marked unsafeToRepeat already ran or `maxAttempts` is used up. Runs of
   * this instance are left alone, so it is safe to call at any time. Resolves when every restarted
   * run has ended.
   */
  async recover(): Promise<BridgeExecution[]> {
    const pending: Array<BridgeExecution | Promise<BridgeExecution>> = [];
    for (const row of this.#store.running()) {
      // A run whose journal is its caller's is re-attached by that caller, never recovered here.
      if (this.#attempts.isLive(row.id) || row.externalJournal) continue;
      if (row.onInterrupt === "replay") {
        const port = this.#ownJournal();
        pending.push(this.#carryOut(row, this.#planner.planReplay(row, port), port));
      } else {
        pending.push(this.#carryOut(row, this.#planner.planRestart(row), null));
      }
    }
    return Promise.all(pending);
  }

  /**
   * When {@link alarm} is next needed: now if a previous instance left executions running, else
   * the timeout (plus a second's grace) of the earliest run of this instance; `null` when nothing runs.
   */
  nextWakeAt(): number | null {
    let at: number | null = null;
    for (const row of this.#store.running()) {
      const deadline = this.#attempts.deadlineOf(row.id);
      if (deadline === null && row.externalJournal) continue;
      const when = deadline === null ? this.#now() : deadline + ALARM_GRACE_MS;
      if (at === null || when < at) at = when;
    }
    return at;
  }

  /** The alarm part: recovers executions left running (see {@link recover}). */
  async alarm(): Promise<void> {
    await this.recover();
  }

  /**
   * Asks (earlier-only) for the wake that recovers a run this instance may not live to finish.
   * Not awaited: the run starts now, and the alarm write is ordered before the object's next output.
   */
  #requestRecoveryWake(now: number): void {
    requestWake(this.#ctx, now + this.#limits.runTimeoutMs + ALARM_GRACE_MS).catch(() => {
      // A failed alarm write leaves recovery to the next alarm or the next start of the object.
    });
  }
}
