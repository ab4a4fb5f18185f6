import { type ErrorRecord, isUnsafeToRepeat, toErrorRecord } from "@durablekit/handle-journal";
import { CallBudget, resolveCall } from "./admission";
import { argumentReader, releaseArguments, SignalMirrors } from "./call-arguments";
import { CallKeys, type CallState, callLabel, HostCallContext } from "./call-state";
import type { Access } from "./context";
import { Deadlines } from "./deadlines";
import { BridgeError, bridgeErrorRecord } from "./errors";
import type { BridgeEvent } from "./events";
import { disposeStray, HandleTable } from "./handle-table";
import type { Limits } from "./limits";
import type { ModuleRegistry } from "./module-registry";
import { shapeResponse } from "./response";
import { readArgs } from "./values";
import { type Answer, failure } from "./wire";

/** How one attempt of a run ended. */
export type AttemptOutcome =
  | { kind: "completed"; value: unknown }
  | { kind: "failed"; error: ErrorRecord }
  | { kind: "interrupted"; reason: string }
  | { kind: "cancelled"; reason: string };

/** What a {@link Run} is built from. */
export interface RunOptions {
  executionId: string;
  attempt: number;
  access: Access;
  limits: Limits;
  registry: ModuleRegistry;
  onEvent?: ((event: BridgeEvent) => void) | undefined;
  /** Called, before it runs, for the first call of a function marked unsafeToRepeat. */
  onUnsafeCall?: ((label: string) => void) | undefined;
}

function handledRejection(error: unknown): Promise<never> {
  const promise = Promise.reject(error);
  promise.catch(() => {});
  return promise;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null | undefined)?.then === "function";
}

/**
 * One attempt of one execution, host side: the handle table, the budget the limits check, the
 * calls in flight and their deadlines. Every call from the isolate, to an exported function or a
 * handle's method, enters through {@link invoke} and takes the same steps: resolve what is called
 * and check access (`resolveCall`), check the limits (`CallBudget`), read the arguments, key it
 * (`CallKeys`), run it with its own context, and shape the response (`shapeResponse`). A replay
 * journal (a later part) slots in between keying and running, and after shaping.
 */
export class Run {
  readonly executionId: string;
  readonly attempt: number;
  readonly access: Access;
  /** Epoch ms when this attempt times out. */
  readonly deadline: number;
  /** Settles with the outcome when the attempt is stopped from the host side (timeout, cancel, interrupt). */
  readonly stopped: Promise<AttemptOutcome>;

  readonly #limits: Limits;
  readonly #table: HandleTable;
  readonly #budget: CallBudget;
  readonly #deadlines: Deadlines;
  readonly #keys = new CallKeys();
  readonly #mirrors = new SignalMirrors();
  readonly #onEvent: RunOptions["onEvent"];
  readonly #onUnsafeCall: RunOptions["onUnsafeCall"];
  #stop!: (outcome: AttemptOutcome) => void;
  #active = true;
  #stopRequested = false;

  constructor(options: RunOptions) {
    const limits = options.limits;
    this.executionId = options.executionId;
    this.attempt = options.attempt;
    this.access = options.access;
    this.#limits = limits;
    this.#table = new HandleTable(options.registry.hosts, limits.maxHandles);
    this.#budget = new CallBudget(limits);
    this.#onEvent = options.onEvent;
    this.#onUnsafeCall = options.onUnsafeCall;
    this.stopped = new Promise((resolve) => {
      this.#stop = resolve;
    });
    this.#deadlines = new Deadlines(
      limits.runTimeoutMs,
      limits.callTimeoutMs,
      this.#budget.inflight,
      {
        runTimedOut: () => this.#timeOut(),
        callTimedOut: (call) =>
          this.#cutOff(
            call,
            new BridgeError(
              "bridge/call-timeout",
              `${callLabel(call)} passed its deadline (callTimeoutMs ${limits.callTimeoutMs}, or the run's end) and was cut off.`,
            ),
          ),
      },
    );
    this.deadline = this.#deadlines.run;
  }

  #timeOut(): void {
    this.stop({
      kind: "failed",
      error: bridgeErrorRecord(
        "bridge/run-timeout",
        `The run took longer than ${this.#limits.runTimeoutMs} ms (runTimeoutMs) and was stopped.`,
      ),
    });
  }

  /** Calls admitted so far. */
  get calls(): number {
    return this.#budget.calls;
  }

  /** Objects and functions held now. */
  get held(): number {
    return this.#table.held;
  }

  /** Asks the attempt to stop with `outcome` (the first request wins). */
  stop(outcome: AttemptOutcome): void {
    if (this.#stopRequested) return;
    this.#stopRequested = true;
    this.#stop(outcome);
  }

  /**
   * Ends the attempt: refuses new calls, cuts off calls in flight (their signals abort with
   * `bridge/run-ended`), aborts mirrored signals and disposes every object and function still held.
   * Returns how many were disposed.
   */
  end(): number {
    if (!this.#active) return 0;
    this.#active = false;
    this.#stopRequested = true;
    this.#deadlines.clear();
    const ended = new BridgeError(
      "bridge/run-ended",
      "The run ended while this call was in flight.",
    );
    for (const call of [...this.#budget.inflight]) this.#cutOff(call, ended);
    this.#mirrors.abortAll(ended);
    return this.#table.disposeAll();
  }

  /** `ctx.interrupt()`: stops the attempt as interrupted and rejects for the calling host code. */
  interrupt(call: CallState, reason?: string): Promise<never> {
    const text = reason ?? `${callLabel(call)} interrupted the run`;
    this.stop({ kind: "interrupted", reason: text });
    return handledRejection(
      new BridgeError("bridge/interrupted", `The run was interrupted: ${text}.`),
    );
  }

  /** The program disposed an object or function (`using` / `[Symbol.dispose]`). */
  release(handleId: unknown): void {
    if (typeof handleId === "number") this.#table.dispose(handleId);
  }

  /** The program aborted a signal it had passed as an argument. */
  abortSignal(signalId: unknown, reason: unknown): void {
    this.#mirrors.abort(signalId, reason);
  }

  /**
   * The one entry point of every call from the isolate. Always answers (see `Answer`), never
   * rejects: what host code throws travels as an error record. A call whose host code returns
   * synchronously is answered synchronously, with no promise for Workers RPC to wait on.
   */
  invoke(
    handleId: unknown,
    method: unknown,
    args: unknown,
    special: unknown,
  ): Answer | Promise<Answer> {
    const startedAt = Date.now();
    let call: CallState;
    try {
      call = this.#admit(handleId, method, args, special === 1, startedAt);
    } catch (error) {
      if (this.#onEvent) {
        this.#emit(`${String(handleId)}.${String(method)}`, undefined, "refused", error, startedAt);
      }
      return failure(toErrorRecord(error));
    }
    return this.#perform(call);
  }

  /** Resolve, access, limits, arguments; then the call counts and gets its key. */
  #admit(
    handleId: unknown,
    method: unknown,
    args: unknown,
    special: boolean,
    startedAt: number,
  ): CallState {
    if (!this.#active) {
      throw new BridgeError("bridge/run-ended", "The run has ended; no more calls are answered.");
    }
    const deadline = this.#deadlines.forCall(startedAt);
    const call = resolveCall(this.#table, this.access, handleId, method, args, startedAt, deadline);
    const size = this.#budget.check(call, special);
    if (special) {
      call.args = readArgs(call.args, argumentReader(call, this.#table, this.#mirrors));
    }
    if (this.#onUnsafeCall && isUnsafeToRepeat(call.fn)) this.#onUnsafeCall(callLabel(call));
    this.#budget.admit(size);
    call.key = this.#keys.next(call.handle);
    return call;
  }

  /**
   * Runs an admitted call: synchronously answered when its host code returns a value or throws;
   * otherwise answered when its promise settles or the call is cut off, whichever is first.
   */
  #perform(call: CallState): Answer | Promise<Answer> {
    this.#budget.inflight.add(call);
    this.#deadlines.watch();
    let out: unknown;
    try {
      out = call.fn.call(call.thisArg, call.args, new HostCallContext(this, call));
    } catch (error) {
      return this.#fail(call, error);
    }
    if (!isThenable(out)) return this.#respond(call, out);
    return new Promise<Answer>((resolve) => {
      call.resolve = resolve;
      out.then(
        (value) => {
          if (call.done || !this.#active) disposeStray(value, (v) => this.#table.holds(v));
          else resolve(this.#respond(call, value));
        },
        (error: unknown) => {
          if (!call.done) resolve(this.#fail(call, error));
        },
      );
    });
  }

  #respond(call: CallState, value: unknown): Answer {
    let answer: Answer;
    try {
      answer = shapeResponse(value, call, this.#table, this.#budget);
    } catch (error) {
      return this.#fail(call, error);
    }
    this.#finish(call, false, undefined);
    return answer;
  }

  #fail(call: CallState, error: unknown): Answer {
    this.#finish(call, true, error);
    return failure(toErrorRecord(error));
  }

  /** The call is answered: it leaves the in-flight set and releases what it was passed. */
  #finish(call: CallState, failed: boolean, error: unknown): void {
    call.done = true;
    this.#budget.inflight.delete(call);
    if (call.callbacks || call.signals) releaseArguments(call, this.#mirrors);
    if (this.#onEvent) {
      this.#emit(callLabel(call), call.key, failed ? "error" : "ok", error, call.startedAt);
    }
  }

  /** Ends a call before its host code settled: its signal aborts and the program gets `reason`. */
  #cutOff(call: CallState, reason: BridgeError): void {
    if (call.done) return;
    call.cutOff = reason;
    call.controller?.abort(reason);
    const answer = this.#fail(call, reason);
    call.resolve?.(answer);
  }

  #emit(
    label: string,
    key: string | undefined,
    outcome: "ok" | "error" | "refused",
    error: unknown,
    startedAt: number,
  ): void {
    const code = (error as { code?: unknown } | undefined)?.code;
    try {
      this.#onEvent?.({
        type: "bridge:call",
        executionId: this.executionId,
        attempt: this.attempt,
        ...(key === undefined ? {} : { key }),
        label,
        outcome,
        ...(typeof code === "string" ? { code } : {}),
        ms: Date.now() - startedAt,
      });
    } catch {
      // A listener's failure is its own; the call's answer does not change.
    }
  }
}
