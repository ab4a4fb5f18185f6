import { type AlarmPart, createEmitter, requestWake } from "@durablekit/compose";
import {
  decode,
  type ErrorRecord,
  fromErrorRecord,
  toErrorRecord,
  utf8ByteLength,
} from "@durablekit/handle-journal";
import type { BridgeAccess, BridgeInterruptPolicy } from "./context";
import { encodeChecked, isCyclic } from "./data-size";
import { BridgeEndpoint } from "./endpoint";
import { BridgeError, type BridgeErrorCode, boundErrorRecord, bridgeErrorRecord } from "./errors";
import type { BridgeEvent } from "./events";
import type { Execution, ExecutionError, ExecutionRecord } from "./execution";
import { ExecutionStore, type RunningExecution } from "./execution-store";
import {
  type BridgeLoader,
  checkAccess,
  checkExecuteOptions,
  checkExecutorOptions,
  checkPolicy,
  DEFAULT_COMPATIBILITY_DATE,
  type ExecuteOptions,
  type ExecutorOptions,
} from "./executor-options";
import { disposeQuietly } from "./handle-table";
import { type BridgeLimits, resolveLimits } from "./limits";
import { MAIN_MODULE, ModuleRegistry } from "./module-registry";
import { type AttemptOutcome, Run } from "./run";
import type { EvaluateOptions, Outcome } from "./wire";

/** One execution being driven through its attempts. */
interface Drive {
  id: string;
  modules: Record<string, string>;
  input: unknown;
  access: BridgeAccess;
  onInterrupt: BridgeInterruptPolicy;
  attempt: number;
}

/** How an execution ends, with the codec text of its result. */
type Settled = Omit<Execution, "executionId"> & { resultText?: string };

/** What becomes of an execution a previous instance left running. */
type RecoveryPlan =
  | { action: "fail"; error: ExecutionError }
  | { action: "restart"; modules: Record<string, string>; input: unknown };

/** The isolate's entrypoint (the runner, src/isolate/runner.ts). */
interface Evaluator {
  evaluate(input: unknown, bridge: BridgeEndpoint, options: EvaluateOptions): Promise<Outcome>;
}

/** How long after a run's timeout the recovery alarm is asked for. */
const ALARM_GRACE_MS = 1_000;

/** The reason of an execution cancelled by its `execute()` signal. */
const ABORTED = "the execute() signal aborted";

/** The error body of a new `BridgeError`, as an execution's `error`. */
function errorBody(code: BridgeErrorCode, message: string): ExecutionError {
  return bridgeErrorRecord(code, message).$error as ExecutionError;
}

/** The body of any thrown value's error record, as an execution's `error`. */
function thrownBody(error: unknown): ExecutionError {
  return toErrorRecord(error).$error as ExecutionError;
}

function isolateFailed(what: string, error: unknown): AttemptOutcome {
  const why = error instanceof Error ? error.message : String(error);
  return { kind: "failed", error: bridgeErrorRecord("bridge/isolate-failed", `${what}: ${why}`) };
}

/**
 * Normalizes a record from the isolate (untrusted) through handle-journal's own round trip. A
 * `bridge/…` code in it was thrown by the program, not by the bridge: it moves to `programCode`, so
 * an execution's `code` starting with `bridge/` is always the bridge's own.
 */
function normalize(record: ErrorRecord): ErrorRecord {
  let normalized: ErrorRecord;
  try {
    normalized = toErrorRecord(fromErrorRecord(record));
  } catch {
    return toErrorRecord(new Error("The program failed with an unreadable error."));
  }
  const { code, ...rest } = normalized.$error;
  if (typeof code === "string" && code.startsWith("bridge/")) {
    return { $error: { ...rest, programCode: code } };
  }
  return normalized;
}

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
  readonly #loader: BridgeLoader;
  readonly #compatibilityDate: string;
  readonly #compatibilityFlags: string[];
  readonly #registry: ModuleRegistry;
  readonly #limits: BridgeLimits;
  readonly #store: ExecutionStore;
  /** Runs of this instance, by execution id; a running row without one here was left by a previous instance. */
  readonly #live = new Map<string, Run>();
  readonly #access: BridgeAccess;
  readonly #onInterrupt: BridgeInterruptPolicy;
  readonly #now: () => number;
  readonly #emit: (event: BridgeEvent) => void;
  /** Given to runs only when someone listens, so a run builds no call labels for nobody. */
  readonly #runEmit: ((event: BridgeEvent) => void) | undefined;

  /**
   * Checks the modules (specifiers, export names), limits and options, and creates or checks the
   * `dk_bridge_*` tables in `ctx.storage`.
   * @throws BridgeError `bridge/invalid-argument` for a malformed option, `bridge/invalid-module`
   *   for a malformed module, `bridge/replay-unsupported` for `onInterrupt: "replay"`,
   *   `bridge/schema-too-new` when the tables were written by a newer version.
   */
  constructor(ctx: DurableObjectState, options: ExecutorOptions) {
    if (typeof ctx !== "object" || ctx === null || typeof ctx.storage?.sql !== "object") {
      throw invalid("Executor takes the Durable Object's state: new Executor(this.ctx, options).");
    }
    checkExecutorOptions(options);
    this.#ctx = ctx;
    this.#loader = options.loader;
    this.#compatibilityDate = options.compatibilityDate ?? DEFAULT_COMPATIBILITY_DATE;
    this.#compatibilityFlags = options.compatibilityFlags ?? [];
    this.#registry = new ModuleRegistry(options.modules);
    this.#limits = resolveLimits(options.limits);
    this.#access = checkAccess(options.access ?? "read-write");
    this.#onInterrupt = checkPolicy(options.onInterrupt ?? "fail");
    this.#now = options.now ?? Date.now;
    this.#emit = createEmitter("@durablekit/rpc-bridge", options.onEvent);
    this.#runEmit = options.onEvent === undefined ? undefined : this.#emit;
    this.#store = new ExecutionStore(ctx.storage);
  }

  /** The limits every run gets. */
  get limits(): Readonly<BridgeLimits> {
    return this.#limits;
  }

  /** Ids of the executions running in this instance now. */
  get running(): string[] {
    return [...this.#live.keys()];
  }

  // ── Executions ─────────────────────────────────────────────────────────────

  /**
   * Runs `source` (an ES module whose default export takes `input`) to its end and answers how it
   * ended. A program that cannot run (bad import, no default export, input over the limit) is
   * refused with a thrown error before anything runs or is recorded.
   * @throws BridgeError `bridge/module-not-found`, `bridge/module-private`, `bridge/invalid-program`,
   * `bridge/limit-input-bytes`, `bridge/unserializable`, `bridge/conflict` (the id exists),
   * `bridge/replay-unsupported`, `bridge/invalid-argument`.
   */
  async execute(source: string, input?: unknown, options: ExecuteOptions = {}): Promise<Execution> {
    checkExecuteOptions(options);
    const onInterrupt = checkPolicy(options.onInterrupt ?? this.#onInterrupt);
    const access = checkAccess(options.access ?? this.#access);
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
    const inputText = encodeChecked(
      input,
      this.#limits.maxInputBytes,
      "input",
      "bridge/limit-input-bytes",
      "maxInputBytes",
    );
    const id = options.id ?? crypto.randomUUID();
    if (this.#live.has(id) || this.#store.has(id)) {
      throw new BridgeError(
        "bridge/conflict",
        `An execution with id "${id}" already exists; use another id or read it with get().`,
      );
    }
    const now = this.#now();
    // Recorded running before anything runs: a restart finds the row and recovers it.
    this.#store.insert({ id, onInterrupt, access, source, input: inputText, now });
    this.#requestRecoveryWake(now);
    const signal = options.signal;
    if (signal?.aborted) {
      // Aborted before it started: recorded, and cancelled without running.
      return this.#end(id, 1, 0, this.#settle({ kind: "cancelled", reason: ABORTED }));
    }
    const onAbort = () => this.cancel(id, ABORTED);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.#drive({ id, modules, input, access, onInterrupt, attempt: 1 });
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * The stored record of an execution, or `null` when there is none.
   * @throws BridgeError `bridge/invalid-argument` when `executionId` is not a string.
   */
  get(executionId: string): ExecutionRecord | null {
    if (typeof executionId !== "string") throw invalid("get takes an execution id (a string).");
    return this.#store.get(executionId);
  }

  /**
   * Cancels a running execution of this instance; false when none is running under that id.
   * @throws BridgeError `bridge/invalid-argument` when `executionId` or `reason` is not a string.
   */
  cancel(executionId: string, reason = "cancelled"): boolean {
    if (typeof executionId !== "string" || typeof reason !== "string") {
      throw invalid("cancel takes an execution id and an optional reason, both strings.");
    }
    const run = this.#live.get(executionId);
    if (!run) return false;
    run.stop({ kind: "cancelled", reason });
    return true;
  }

  /**
   * Deletes the records of executions that ended before `before` (epoch ms); returns how many.
   * @throws BridgeError `bridge/invalid-argument` when `before` is not a finite number.
   */
  prune(before: number): number {
    if (typeof before !== "number" || !Number.isFinite(before)) {
      throw invalid(`prune takes a time in epoch milliseconds; got ${String(before)}.`);
    }
    return this.#store.prune(before);
  }

  // ── Recovery (the alarm part) ──────────────────────────────────────────────

  /**
   * Settles executions a previous instance left running (its Durable Object restarted under them):
   * `"fail"` ones fail with `bridge/interrupted`; `"restart"` ones run again from the top (a new
   * attempt), unless a call marked unsafeToRepeat already ran or `maxAttempts` is used up. Runs of
   * this instance are left alone, so it is safe to call at any time. Resolves when every restarted
   * run has ended.
   */
  async recover(): Promise<Execution[]> {
    const pending: Array<Execution | Promise<Execution>> = [];
    for (const row of this.#store.running()) {
      if (this.#live.has(row.id)) continue;
      const plan = this.#planRecovery(row);
      if (plan.action === "fail") {
        pending.push(this.#end(row.id, row.attempt, 0, { state: "failed", error: plan.error }));
        continue;
      }
      this.#store.restart(row.id, row.attempt + 1);
      this.#requestRecoveryWake(this.#now());
      pending.push(
        this.#drive({
          id: row.id,
          modules: plan.modules,
          input: plan.input,
          access: row.access,
          // The policy stored with the execution, never a default: recovery dispatches on it.
          onInterrupt: row.onInterrupt,
          attempt: row.attempt + 1,
        }),
      );
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
      const run = this.#live.get(row.id);
      const when = run ? run.deadline + ALARM_GRACE_MS : this.#now();
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

  /**
   * Decides what becomes of an execution whose Durable Object restarted under it: an
   * `onInterrupt: "fail"` one fails with `bridge/interrupted`; a `"restart"` one runs again from the
   * top unless a call marked unsafeToRepeat ran, `maxAttempts` is used up, or its stored program or
   * input no longer loads (a module it imports was removed), when it fails saying which.
   */
  #planRecovery(row: RunningExecution): RecoveryPlan {
    switch (row.onInterrupt) {
      case "fail":
        return {
          action: "fail",
          error: errorBody(
            "bridge/interrupted",
            "The run was interrupted when its Durable Object restarted (onInterrupt: fail).",
          ),
        };
      case "replay":
        // execute refuses "replay" in this version, so only a row written by a later version gets here.
        return {
          action: "fail",
          error: errorBody(
            "bridge/replay-unsupported",
            'The run was recorded with onInterrupt "replay", which this version of @durablekit/rpc-bridge cannot recover.',
          ),
        };
      case "restart":
        break;
      default:
        return {
          action: "fail",
          error: errorBody(
            "bridge/interrupted",
            `The run was recorded with an unknown onInterrupt policy ${JSON.stringify(row.onInterrupt)}.`,
          ),
        };
    }
    const refusal = this.#restartRefusal(row.unsafeCall, row.attempt);
    if (refusal) return { action: "fail", error: refusal };
    if (row.attempt >= 2) {
      // Bounds the damage of a program that hangs or kills the runtime (locally nothing enforces
      // cpuMs): a run its object died under is restarted automatically once, never again.
      return {
        action: "fail",
        error: errorBody(
          "bridge/too-many-attempts",
          `The run's Durable Object restarted under attempt ${row.attempt}; a run is restarted after its object restarted at most once, so a program that hangs or exhausts the runtime is not run again.`,
        ),
      };
    }
    try {
      return {
        action: "restart",
        modules: this.#registry.graph(row.source),
        input: decode(row.input),
      };
    } catch (error) {
      return { action: "fail", error: thrownBody(error) };
    }
  }

  // ── Attempts ───────────────────────────────────────────────────────────────

  async #drive(drive: Drive): Promise<Execution> {
    let unsafeCall: string | undefined;
    for (let attempt = drive.attempt; ; attempt++) {
      if (attempt > drive.attempt) this.#store.restart(drive.id, attempt);
      const run = new Run({
        executionId: drive.id,
        attempt,
        access: drive.access,
        limits: this.#limits,
        registry: this.#registry,
        emit: this.#runEmit,
        onUnsafeCall: (label) => {
          if (drive.onInterrupt !== "restart" || unsafeCall !== undefined) return;
          unsafeCall = label;
          this.#store.markUnsafe(drive.id, label);
        },
      });
      this.#live.set(drive.id, run);
      this.#emit({ type: "bridge:execution", executionId: drive.id, state: "running", attempt });
      let result: { outcome: AttemptOutcome; disposed: number };
      try {
        result = await this.#attempt(drive, run);
      } finally {
        this.#live.delete(drive.id);
      }
      const { outcome, disposed } = result;
      if (outcome.kind === "interrupted" && drive.onInterrupt === "restart") {
        const refusal = this.#restartRefusal(unsafeCall, attempt, outcome.reason);
        if (!refusal) continue;
        return this.#end(
          drive.id,
          attempt,
          run.calls,
          { state: "failed", error: refusal },
          disposed,
        );
      }
      return this.#end(drive.id, attempt, run.calls, this.#settle(outcome), disposed);
    }
  }

  /**
   * Runs one attempt: a fresh isolate from the Worker Loader (no network: `globalOutbound: null`;
   * no bindings: an empty `env`; the CPU limit), its `evaluate` raced against the run's own stop
   * (timeout, cancel, interrupt). The isolate is released and the run ended (every handle it still
   * held disposed) before this returns.
   */
  async #attempt(drive: Drive, run: Run): Promise<{ outcome: AttemptOutcome; disposed: number }> {
    const cpuMs = this.#limits.cpuMs;
    let outcome: AttemptOutcome;
    let worker: WorkerStub | undefined;
    let entrypoint: unknown;
    try {
      worker = this.#loader.load({
        compatibilityDate: this.#compatibilityDate,
        compatibilityFlags: this.#compatibilityFlags,
        limits: { cpuMs },
        mainModule: MAIN_MODULE,
        modules: drive.modules,
        env: {},
        globalOutbound: null,
      });
      entrypoint = worker.getEntrypoint(undefined, { limits: { cpuMs } });
      const evaluation = (entrypoint as unknown as Evaluator)
        .evaluate(drive.input, new BridgeEndpoint(run), {
          maxRequestBytes: this.#limits.maxRequestBytes,
        })
        .then(
          (outcome): AttemptOutcome => {
            if (outcome.kind === "returned") return { kind: "completed", value: outcome.value };
            const error = normalize(outcome.record);
            if (outcome.kind !== "threw") {
              const what =
                outcome.kind === "timer-error"
                  ? "The program threw inside a timer callback"
                  : "The program left a rejected promise unhandled";
              error.$error = {
                ...error.$error,
                code: "bridge/unhandled-rejection",
                message: `${what}: ${error.$error.message}`,
              };
            }
            return { kind: "failed", error };
          },
          (error: unknown) => isolateFailed("The program's isolate failed", error),
        );
      outcome = await Promise.race([evaluation.then((o) => run.checkDeadline(o)), run.stopped]);
    } catch (error) {
      outcome = isolateFailed("The program's isolate could not start", error);
    } finally {
      disposeQuietly(entrypoint);
      disposeQuietly(worker);
    }
    return { outcome, disposed: run.end() };
  }

  // ── Ends ───────────────────────────────────────────────────────────────────

  /**
   * Why an interrupted `"restart"` run may not run again, or undefined when it may: a call marked
   * unsafeToRepeat ran (`unsafeCall`), or `attempt` was the last of `maxAttempts`. `reason` is the
   * interruption's, when known.
   */
  #restartRefusal(
    unsafeCall: string | null | undefined,
    attempt: number,
    reason?: string,
  ): ExecutionError | undefined {
    if (unsafeCall !== null && unsafeCall !== undefined) {
      return errorBody(
        "bridge/unsafe-to-repeat",
        `The run was interrupted${reason === undefined ? "" : ` (${reason})`} after ${unsafeCall} ran, which is marked unsafeToRepeat, so it is not restarted.`,
      );
    }
    const maxAttempts = this.#limits.maxAttempts;
    if (attempt >= maxAttempts) {
      return errorBody(
        "bridge/too-many-attempts",
        `The run was interrupted on each of its ${maxAttempts} attempts (maxAttempts)${reason === undefined ? "" : `; last: ${reason}`}.`,
      );
    }
    return undefined;
  }

  /**
   * How an execution ends after an attempt that was not restarted: completed with its result and
   * the result's codec text for the store (over `maxResultBytes`, or not data, it fails with
   * `bridge/limit-result-bytes`), failed, failed as interrupted, or cancelled.
   */
  #settle(outcome: AttemptOutcome): Settled {
    switch (outcome.kind) {
      case "completed": {
        const code = "bridge/limit-result-bytes";
        try {
          const resultText = encodeChecked(
            outcome.value,
            this.#limits.maxResultBytes,
            "result",
            code,
            "maxResultBytes",
          );
          return { state: "completed", result: outcome.value, resultText };
        } catch (error) {
          const body = thrownBody(error);
          // A cyclic result stays `bridge/unserializable`; any other non-data result is over the limit of data.
          if (body.code === "bridge/unserializable" && !isCyclic(outcome.value)) {
            body.code = code;
            body.message = `The program's result is not data: ${body.message}`;
          }
          return { state: "failed", error: body };
        }
      }
      case "failed": {
        // The program's own error is bounded like its result.
        const { record } = boundErrorRecord(
          outcome.error,
          this.#limits.maxResultBytes,
          "maxResultBytes",
        );
        return { state: "failed", error: record.$error as ExecutionError };
      }
      case "interrupted":
        return {
          state: "failed",
          error: errorBody("bridge/interrupted", `The run was interrupted: ${outcome.reason}.`),
        };
      case "cancelled":
        return {
          state: "cancelled",
          error: errorBody("bridge/cancelled", `The run was cancelled: ${outcome.reason}.`),
        };
    }
  }

  #end(id: string, attempt: number, calls: number, settled: Settled, disposed = 0): Execution {
    const { resultText, ...rest } = settled;
    const execution: Execution = { executionId: id, ...rest };
    if (execution.state !== "running") {
      // One statement; a second end of the same execution changes nothing.
      this.#store.finish(id, execution.state, {
        ...(resultText === undefined ? {} : { resultText }),
        ...(execution.error === undefined ? {} : { error: { $error: execution.error } }),
        calls,
        now: this.#now(),
      });
    }
    this.#emit({
      type: "bridge:execution",
      executionId: id,
      state: execution.state,
      attempt,
      ...(typeof execution.error?.code === "string" ? { code: execution.error.code } : {}),
      disposed,
    });
    return execution;
  }
}
