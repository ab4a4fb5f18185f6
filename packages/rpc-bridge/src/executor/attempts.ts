import { encode, type JournalEntry, type JournalPort } from "@durablekit/handle-journal";
import type { BridgeAccess, BridgeInterruptPolicy } from "../context";
import { boundErrorRecord, bridgeErrorRecord, fromJournalFailure } from "../errors";
import type { BridgeEvent } from "../events";
import { BridgeEndpoint } from "../host/endpoint";
import type { BridgeLimits } from "../limits";
import { MAIN_MODULE, type ModuleRegistry } from "../modules/module-registry";
import { type CallJournal, LIVE } from "../replay/call-journal";
import { ReplayCalls } from "../replay/replay-calls";
import { RunJournal } from "../replay/run-journal";
import type { AttemptOutcome, RunInterrupt } from "../run/attempt-outcome";
import { disposeQuietly } from "../run/handle-table";
import { Run } from "../run/run";
import type { EvaluateOptions, Outcome } from "../shared/wire";
import { encodeChecked } from "../values/data-size";
import type { BridgeExecution, BridgeExecutionError } from "./execution";
import { errorBody, isolateFailed, normalize, thrownBody } from "./execution-errors";
import type { ExecutionStore } from "./execution-store";
import type { BridgeLoader } from "./executor-options";
import type { RecoveryPlanner } from "./recovery";

/** What a replay run's attempts share: its journal, and what makes the isolate deterministic. */
export interface ReplayDrive {
  port: JournalPort;
  seed: string;
  startedAt: number;
  /** The journal loaded for the first attempt of this drive (`[]` for a new execution), read once. */
  entries: readonly JournalEntry[];
  /** A replay of a recording: a call the journal does not hold ends the run (`bridge/frontier`). */
  refuseLive?: boolean;
}

/** One execution being driven through its attempts. */
export interface Drive {
  id: string;
  modules: Record<string, string>;
  input: unknown;
  access: BridgeAccess;
  onInterrupt: BridgeInterruptPolicy;
  attempt: number;
  /** Present for replay runs. */
  replay?: ReplayDrive;
}

/** How an execution ends, with the codec text of its result. */
export type Settled = Omit<BridgeExecution, "executionId"> & { resultText?: string };

/** The isolate's entrypoint (the runner, src/isolate/runner.ts). */
interface Evaluator {
  evaluate(input: unknown, bridge: BridgeEndpoint, options: EvaluateOptions): Promise<Outcome>;
  halt(): Promise<void>;
}

/** What the attempts of an executor share: its configuration, its table, its planner and its events. */
export interface AttemptsOptions {
  loader: BridgeLoader;
  compatibilityDate: string;
  compatibilityFlags: string[];
  limits: BridgeLimits;
  registry: ModuleRegistry;
  store: ExecutionStore;
  /** Says whether an interrupted `"restart"` run may run again. */
  planner: RecoveryPlanner;
  now: () => number;
  emit: (event: BridgeEvent) => void;
  /** Given to runs only when someone listens, so a run builds no call labels for nobody. */
  runEmit: ((event: BridgeEvent) => void) | undefined;
}

/**
 * The attempt driver of an `Executor`: runs an execution's attempts, one isolate and one `Run`
 * each, and ends the execution the way its last attempt ended. It owns the runs of this instance
 * (a running row without one here was left by a previous instance); the `Executor` asks it, and
 * never reaches into a run.
 */
export class Attempts {
  /** The executor's configuration, table, planner and events, as given. */
  readonly #options: AttemptsOptions;
  /** Runs of this instance, by execution id. */
  readonly #live = new Map<string, Run>();

  constructor(options: AttemptsOptions) {
    this.#options = options;
  }

  /** Ids of the executions running in this instance now. */
  running(): string[] {
    return [...this.#live.keys()];
  }

  /** True when an attempt of this instance runs the execution now. */
  isLive(executionId: string): boolean {
    return this.#live.has(executionId);
  }

  /** When the execution's running attempt times out, or null when none of this instance runs it. */
  deadlineOf(executionId: string): number | null {
    return this.#live.get(executionId)?.deadline ?? null;
  }

  /** Cancels the execution's running attempt; false when none of this instance runs it. */
  cancel(executionId: string, reason: string): boolean {
    const run = this.#live.get(executionId);
    if (!run) return false;
    run.stop({ kind: "cancelled", reason });
    return true;
  }

  // ── Attempts ───────────────────────────────────────────────────────────────

  /**
   * Drives an execution through its attempts until it ends or is released: a `"restart"` run cut
   * off by an interrupt runs again, as the planner allows. The execution's row must be running.
   */
  async drive(drive: Drive): Promise<BridgeExecution> {
    let unsafeCall: string | undefined;
    for (let attempt = drive.attempt; ; attempt++) {
      if (attempt > drive.attempt) this.#options.store.restart(drive.id, attempt);
      let journal: RunJournal | undefined;
      // A replay run's calls go through its journal; any other run's are live.
      let calls: CallJournal = LIVE;
      if (drive.replay !== undefined) {
        try {
          journal = new RunJournal(
            drive.replay.port,
            drive.id,
            () => this.#options.now(),
            drive.replay.entries,
          );
          calls = new ReplayCalls(journal, { refuseLive: drive.replay.refuseLive === true });
        } catch (error) {
          const body = thrownBody(fromJournalFailure(error));
          return this.end(drive.id, attempt, 0, { state: "failed", error: body });
        }
      }
      const run = new Run({
        executionId: drive.id,
        attempt,
        access: drive.access,
        limits: this.#options.limits,
        registry: this.#options.registry,
        emit: this.#options.runEmit,
        onUnsafeCall: (label) => {
          if (drive.onInterrupt !== "restart" || unsafeCall !== undefined) return;
          unsafeCall = label;
          this.#options.store.markUnsafe(drive.id, label);
        },
        calls,
      });
      this.#live.set(drive.id, run);
      this.#options.emit({
        type: "bridge:execution",
        executionId: drive.id,
        state: "running",
        attempt,
      });
      let result: { outcome: AttemptOutcome; disposed: number };
      try {
        result = await this.#attempt(drive, run, calls, journal);
      } finally {
        this.#live.delete(drive.id);
      }
      const { outcome, disposed } = result;
      if (outcome.kind === "suspended") {
        return this.#suspended(drive.id, attempt, run.calls, outcome.interrupt, disposed);
      }
      if (outcome.kind === "interrupted" && drive.onInterrupt === "restart") {
        const refusal = this.#options.planner.restartRefusal(unsafeCall, attempt, outcome.reason);
        if (!refusal) continue;
        return this.end(
          drive.id,
          attempt,
          run.calls,
          { state: "failed", error: refusal },
          disposed,
        );
      }
      return this.end(drive.id, attempt, run.calls, this.#settle(outcome), disposed);
    }
  }

  /**
   * Runs one attempt: a fresh isolate from the Worker Loader (no network: `globalOutbound: null`;
   * no bindings: an empty `env`; the CPU limit), its `evaluate` raced against the run's own stop
   * (timeout, cancel, interrupt). The isolate is released and the run ended (every handle it still
   * held disposed) before this returns.
   */
  async #attempt(
    drive: Drive,
    run: Run,
    calls: CallJournal,
    journal?: RunJournal,
  ): Promise<{ outcome: AttemptOutcome; disposed: number }> {
    const cpuMs = this.#options.limits.cpuMs;
    let outcome: AttemptOutcome;
    let worker: WorkerStub | undefined;
    let entrypoint: unknown;
    /** Set once the isolate's `evaluate` answered: the program ended (or its isolate failed). */
    let evaluated = false;
    try {
      worker = this.#options.loader.load({
        compatibilityDate: this.#options.compatibilityDate,
        compatibilityFlags: this.#options.compatibilityFlags,
        limits: { cpuMs },
        mainModule: MAIN_MODULE,
        modules: drive.modules,
        env: {},
        globalOutbound: null,
      });
      entrypoint = worker.getEntrypoint(undefined, { limits: { cpuMs } });
      const options: EvaluateOptions = { maxRequestBytes: this.#options.limits.maxRequestBytes };
      if (drive.replay !== undefined) {
        options.replay = {
          seed: drive.replay.seed,
          startedAt: drive.replay.startedAt,
          schedule: journal?.schedule ?? [],
          answers: calls.prefetch(),
        };
      }
      const evaluation = (entrypoint as unknown as Evaluator)
        .evaluate(drive.input, new BridgeEndpoint(run), options)
        .then(
          (outcome): AttemptOutcome => {
            evaluated = true;
            if (outcome.kind === "halted") {
              return {
                kind: "failed",
                error: bridgeErrorRecord("bridge/run-ended", "The run ended before its program."),
              };
            }
            if (outcome.kind === "diverged") {
              const record = normalize(outcome.record).$error;
              return {
                kind: "failed",
                error: bridgeErrorRecord(
                  "bridge/diverged",
                  `The replay diverged in the isolate: ${record.message}`,
                ),
              };
            }
            // The calls the isolate answered itself after its last invoke are checked first.
            const mismatch = calls.checkAnswered(outcome.answered);
            if (mismatch !== undefined) return { kind: "failed", error: mismatch };
            // A replay run's program ended: the journal must hold nothing it did not ask for again.
            const left = calls.checkEnded();
            if (left !== undefined) return { kind: "failed", error: left };
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
          (error: unknown) => {
            evaluated = true;
            return isolateFailed("The program's isolate failed", error);
          },
        );
      outcome = await Promise.race([evaluation.then((o) => run.checkDeadline(o)), run.stopped]);
      // A replay run released by ctx.interrupt() stays released, whatever its program did next.
      const suspension = calls.suspension;
      if (suspension !== undefined && outcome.kind !== "cancelled") {
        outcome = { kind: "suspended", interrupt: suspension };
      }
    } catch (error) {
      outcome = isolateFailed("The program's isolate could not start", error);
    } finally {
      // The attempt ended before its program did: the isolate is told to end its evaluate, or it
      // would run on (a pending timer, a call never answered) and hold the object from evicting.
      if (!evaluated && entrypoint !== undefined) {
        try {
          (entrypoint as Evaluator).halt().catch(() => {});
        } catch {
          // An isolate that is already gone has nothing left to stop.
        }
      }
      disposeQuietly(entrypoint);
      disposeQuietly(worker);
    }
    return { outcome, disposed: run.end() };
  }

  // ── Ends ───────────────────────────────────────────────────────────────────

  /**
   * How an execution ends after an attempt that was not restarted: completed with its result and
   * the result's codec text for the store (over `maxResultBytes` it fails with `bridge/too-large`,
   * not data with `bridge/unserializable`), failed, failed as interrupted, or cancelled.
   */
  #settle(outcome: AttemptOutcome): Settled {
    switch (outcome.kind) {
      case "completed": {
        try {
          const resultText = encodeChecked(
            outcome.value,
            this.#options.limits.maxResultBytes,
            "result",
            "maxResultBytes",
          );
          return { state: "completed", result: outcome.value, resultText };
        } catch (error) {
          const body = thrownBody(error);
          if (body.code === "bridge/unserializable") {
            body.message = `The program's result is not data: ${body.message}`;
          }
          return { state: "failed", error: body };
        }
      }
      case "failed": {
        // The program's own error is bounded like its result.
        const { record } = boundErrorRecord(
          outcome.error,
          this.#options.limits.maxResultBytes,
          "maxResultBytes",
        );
        return { state: "failed", error: record.$error as BridgeExecutionError };
      }
      case "interrupted":
        return {
          state: "failed",
          error: errorBody("bridge/interrupted", `The run was interrupted: ${outcome.reason}.`),
        };
      case "suspended":
        // drive ends a suspended attempt with #suspended; this is never reached.
        return {
          state: "failed",
          error: errorBody("bridge/interrupted", "The run was interrupted."),
        };
      case "cancelled":
        return {
          state: "cancelled",
          error: errorBody("bridge/cancelled", `The run was cancelled: ${outcome.reason}.`),
        };
    }
  }

  /**
   * A replay run released by `ctx.interrupt()`: recorded `interrupted` at its interrupt (one
   * statement), waiting for `resume`.
   */
  #suspended(
    id: string,
    attempt: number,
    calls: number,
    interrupt: RunInterrupt,
    disposed: number,
  ): BridgeExecution {
    let payloadText: string;
    try {
      payloadText = encode(interrupt.payload);
    } catch {
      payloadText = encode(null);
    }
    this.#options.store.suspend(id, interrupt.key, payloadText, calls);
    this.#options.emit({
      type: "bridge:execution",
      executionId: id,
      state: "interrupted",
      attempt,
      disposed,
    });
    return { executionId: id, state: "interrupted", interrupt };
  }

  /**
   * Ends an execution: records how it ended (one statement; a second end changes nothing) and
   * emits the event. Returns the execution as its caller answers it.
   */
  end(id: string, attempt: number, calls: number, settled: Settled, disposed = 0): BridgeExecution {
    const { resultText, ...rest } = settled;
    const execution: BridgeExecution = { executionId: id, ...rest };
    if (execution.state !== "running") {
      // One statement; a second end of the same execution changes nothing.
      this.#options.store.finish(id, execution.state, {
        ...(resultText === undefined ? {} : { resultText }),
        ...(execution.error === undefined ? {} : { error: { $error: execution.error } }),
        calls,
        now: this.#options.now(),
      });
    }
    this.#options.emit({
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
