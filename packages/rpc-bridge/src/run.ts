import {
  type ErrorRecord,
  fromErrorRecord,
  isErrorRecord,
  isUnsafeToRepeat,
} from "@durablekit/handle-journal";
import { CallBudget } from "./call-budget";
import { CallKeys, type CallState, callLabel, HostCallContext, labelOf } from "./call-state";
import type { BridgeAccess, BridgeHostFunction } from "./context";
import { dataSize, measurable } from "./data-size";
import { Deadlines } from "./deadlines";
import { BridgeError, boundErrorRecord, bridgeErrorRecord, safeErrorRecord } from "./errors";
import type { BridgeEvent } from "./events";
import { disposeStray, HandleTable } from "./handle-table";
import type { BridgeLimits } from "./limits";
import type { ModuleRegistry } from "./module-registry";
import { isReadOnly } from "./read-only";
import { SignalMirrors } from "./signal-mirrors";
import { type ArgumentReader, readArgs, writeResult } from "./values";
import { type Answer, envelopeOf, failure, HALT, plain, type Reply, TAG, tagged } from "./wire";

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
  access: BridgeAccess;
  limits: BridgeLimits;
  registry: ModuleRegistry;
  /** The executor's event sink, or undefined when nobody listens (then no call labels are built). */
  emit?: ((event: BridgeEvent) => void) | undefined;
  /** Called, before it runs, for the first call of a function marked unsafeToRepeat. */
  onUnsafeCall?: ((label: string) => void) | undefined;
}

function handledRejection(error: unknown): Promise<never> {
  const promise = Promise.reject(error);
  promise.catch(() => {});
  return promise;
}

const RESPONSE_LIMIT = "bridge/limit-response-bytes";

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null | undefined)?.then === "function";
}

/**
 * One attempt of one execution, host side: the handle table, the budget the limits check, the
 * calls in flight and their deadlines. Every call from the isolate, to an exported function or a
 * handle's method, enters through {@link invoke} and takes the same steps: resolve what is called
 * and check access ({@link #resolve}), check the limits (`CallBudget`), read the arguments
 * ({@link #argumentReader}), key it (`CallKeys`), run it with its own context, and shape the
 * response ({@link #shape}). A replay journal (a later part) slots in between keying and running,
 * and after shaping.
 */
export class Run {
  readonly executionId: string;
  readonly attempt: number;
  readonly access: BridgeAccess;
  /** Epoch ms when this attempt times out. */
  readonly deadline: number;
  /** Settles with the outcome when the attempt is stopped from the host side (timeout, cancel, interrupt). */
  readonly stopped: Promise<AttemptOutcome>;

  readonly #limits: BridgeLimits;
  readonly #table: HandleTable;
  readonly #budget: CallBudget;
  readonly #deadlines: Deadlines;
  readonly #keys = new CallKeys();
  readonly #mirrors = new SignalMirrors();
  readonly #emitEvent: RunOptions["emit"];
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
    this.#emitEvent = options.emit;
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
    this.stop(this.#timedOut());
  }

  #timedOut(): AttemptOutcome {
    return {
      kind: "failed",
      error: bridgeErrorRecord(
        "bridge/run-timeout",
        `The run took longer than ${this.#limits.runTimeoutMs} ms (runTimeoutMs) and was stopped.`,
      ),
    };
  }

  /**
   * The outcome of an attempt whose program ended on its own: a result or error that arrives after
   * the run's deadline is a `bridge/run-timeout` (a CPU-bound program can hold the thread past its
   * deadline so that no timer fires; in production `cpuMs` ends it, locally nothing does).
   */
  checkDeadline(outcome: AttemptOutcome): AttemptOutcome {
    if (outcome.kind === "completed" || outcome.kind === "failed") {
      if (Date.now() > this.deadline) return this.#timedOut();
    }
    return outcome;
  }

  /** Calls admitted so far. */
  get calls(): number {
    return this.#budget.calls;
  }

  /** Signals mirrored now (for tests: a refused or ended call leaves none behind). */
  get mirrored(): number {
    return this.#mirrors.size;
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
    // Host code sees its signal abort with `bridge/run-ended`; the isolate is answered HALT, so
    // the program's pending calls never settle and it sends nothing more.
    for (const call of [...this.#budget.inflight]) this.#cutOff(call, ended, HALT);
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
    kind: unknown,
  ): Answer | Promise<Answer> {
    const startedAt = Date.now();
    // A program looping on calls can starve the run's timer: every call also checks the deadline.
    if (startedAt >= this.deadline) this.#timeOut();
    let call: CallState;
    try {
      call = this.#admit(handleId, method, args, kind === "tagged", startedAt);
    } catch (error) {
      if (this.#emitEvent) {
        this.#emit(`${String(handleId)}.${String(method)}`, undefined, "refused", error, startedAt);
      }
      // After the run ended the isolate is halted: this is the last call the host sees from it.
      return this.#active ? failure(safeErrorRecord(error)) : HALT;
    }
    return this.#perform(call);
  }

  /** Resolve (which keys the call), access, limits, arguments; then the call counts. */
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
    const call = this.#resolve(handleId, method, args, startedAt, deadline);
    this.#checkAccess(call);
    const size = this.#budget.check(call, special);
    if (special) {
      try {
        call.args = readArgs(call.args, this.#argumentReader(call));
      } catch (error) {
        // A refused call releases the signal mirrors and callbacks it registered before the refusal.
        this.#releaseArguments(call);
        throw error;
      }
    }
    if (this.#onUnsafeCall && isUnsafeToRepeat(call.fn)) this.#onUnsafeCall(callLabel(call));
    this.#budget.admit(size);
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
      answer = this.#shape(value, call);
    } catch (error) {
      return this.#fail(call, error);
    }
    this.#finish(call, false, undefined);
    return answer;
  }

  #fail(call: CallState, error: unknown): Answer {
    this.#finish(call, true, error);
    return failure(this.#errorRecord(error));
  }

  /**
   * The record of an error a call answers with, measured and charged like a response: over
   * `maxResponseBytes` (or what is left of `maxTotalBytes`) it keeps only name, code and a
   * truncated message, and says so. Never throws.
   */
  #errorRecord(error: unknown): ErrorRecord {
    const limits = this.#limits;
    const left = Math.max(0, limits.maxTotalBytes - this.#budget.bytes);
    const max = Math.min(limits.maxResponseBytes, left);
    const limitName = max === left ? "maxTotalBytes (left)" : "maxResponseBytes";
    const { record, bytes } = boundErrorRecord(safeErrorRecord(error), max, limitName);
    this.#budget.chargeError(bytes);
    return record;
  }

  /** The call is answered: it leaves the in-flight set and releases what it was passed. */
  #finish(call: CallState, failed: boolean, error: unknown): void {
    call.done = true;
    this.#budget.inflight.delete(call);
    if (call.callbacks || call.signals) this.#releaseArguments(call);
    if (this.#emitEvent) {
      this.#emit(callLabel(call), call.key, failed ? "error" : "ok", error, call.startedAt);
    }
  }

  /** Ends a call before its host code settled: its signal aborts and the program gets `reason`. */
  #cutOff(call: CallState, reason: BridgeError, answer?: Answer): void {
    if (call.done) return;
    call.cutOff = reason;
    call.controller?.abort(reason);
    const failed = this.#fail(call, reason);
    call.resolve?.(answer ?? failed);
  }

  // ── Resolution ─────────────────────────────────────────────────────────────

  /**
   * Resolves what a call targets: the handle is live (then the call takes its key) and the method
   * is a function of it (a prototype method for an object, `""` for a function handle). Answers
   * the call's state, keyed but not yet checked for access or counted.
   * @throws BridgeError `bridge/unknown-method`, `bridge/handle-disposed`.
   */
  #resolve(
    handleId: unknown,
    method: unknown,
    args: unknown,
    startedAt: number,
    deadline: number,
  ): CallState {
    if (typeof handleId !== "number" || typeof method !== "string" || !Array.isArray(args)) {
      throw new BridgeError("bridge/unknown-method", "Malformed bridge call.");
    }
    const handle = this.#table.get(handleId);
    if (!handle) {
      throw new BridgeError(
        "bridge/handle-disposed",
        `The object was disposed (or belongs to another run); it cannot be called any more.`,
      );
    }
    // Keyed as soon as its handle is known, before any refusal: a call refused from here on (no
    // such method, access, limits, arguments) still consumes its key, so a limit or a host module
    // changed between attempts cannot shift the keys of the calls after it.
    const key = this.#keys.next(handle);
    let fn: unknown;
    let thisArg: unknown;
    if (handle.kind === "module") {
      fn = handle.module.functions.get(method);
      thisArg = handle.module.object;
    } else if (handle.kind === "target") {
      // Only prototype methods recorded when the object was registered, never own data properties.
      if (handle.methods.has(method)) fn = (handle.target as Record<string, unknown>)[method];
      thisArg = handle.target;
    } else if (method === "") {
      fn = handle.fn;
    }
    if (typeof fn !== "function") {
      throw new BridgeError(
        "bridge/unknown-method",
        `${labelOf(handle, method)} is not a function of this ${handle.kind === "module" ? "module" : "object"}.`,
      );
    }
    return {
      key,
      handle,
      method,
      fn: fn as BridgeHostFunction,
      thisArg,
      args,
      deadline,
      startedAt,
      done: false,
    };
  }

  /**
   * In a `"read"` run, refuses a function not marked read-only (after the call got its key).
   * @throws BridgeError `bridge/access-denied`.
   */
  #checkAccess(call: CallState): void {
    if (this.access === "read" && !isReadOnly(call.fn)) {
      throw new BridgeError(
        "bridge/access-denied",
        `${labelOf(call.handle, call.method)} may change state and this run has read-only access; it did not run. Run with access "read-write" to call it.`,
      );
    }
  }

  // ── Arguments ──────────────────────────────────────────────────────────────

  /**
   * Resolves what the isolate passed back in one call's arguments: handle ids into the targets and
   * functions they name, signal records into mirrored AbortSignals, and callbacks into functions
   * that throw `bridge/callback-expired` once the call returned. What it creates is recorded on the
   * call, for {@link #releaseArguments}.
   */
  #argumentReader(call: CallState): ArgumentReader {
    const table = this.#table;
    const mirrors = this.#mirrors;
    return {
      handle: (id: unknown, path: string): unknown => {
        const entry = typeof id === "number" ? table.get(id) : undefined;
        if (!entry || entry.kind === "module") {
          throw new BridgeError(
            "bridge/handle-disposed",
            `The object passed at ${path} was disposed or belongs to another run.`,
            { path },
          );
        }
        return entry.kind === "target" ? entry.target : entry.fn;
      },
      signal: (id: unknown, aborted: boolean, reason: unknown): AbortSignal => {
        const controller = new AbortController();
        if (aborted) {
          controller.abort(isErrorRecord(reason) ? fromErrorRecord(reason) : undefined);
        } else if (typeof id === "number") {
          mirrors.add(id, controller);
          call.signals ??= [];
          call.signals.push([id, controller]);
        }
        return controller.signal;
      },
      callback: (stub: (...args: unknown[]) => unknown) => {
        call.callbacks ??= [];
        call.callbacks.push(stub);
        return (...args: unknown[]): Promise<unknown> => {
          // A callback lives exactly as long as the call it was passed to.
          if (call.done || !this.#active) {
            return handledRejection(
              new BridgeError(
                "bridge/callback-expired",
                `A callback passed to ${callLabel(call)} (call ${call.key}) was used after that call returned; a callback is valid only during the call it is passed to. Use it before returning, or return an object the program can call instead.`,
              ),
            );
          }
          return this.#callBack(call, stub, args);
        };
      },
    };
  }

  /**
   * Host code calls a program callback passed to `call`: it counts toward `maxCalls`, its arguments
   * cross exactly like a call's result (objects and functions registered in the run's handle table,
   * so access, limits, context and disposal apply; errors and URLs as records; measured against
   * `maxResponseBytes` and charged to `maxTotalBytes`), and what the callback returns or throws
   * crosses back like a call's arguments (handles, signals and callbacks resolved; an error record
   * rethrown as an Error).
   */
  async #callBack(
    call: CallState,
    stub: (...args: unknown[]) => unknown,
    args: unknown[],
  ): Promise<unknown> {
    this.#budget.countCallback(() => `a callback passed to ${callLabel(call)}`);
    const wire = this.#shape(args, call, "callback args");
    const reply = (await stub(wire)) as Reply;
    const envelope = envelopeOf(reply);
    if (envelope === null) return reply;
    switch (envelope[TAG]) {
      case "tagged":
        if (call.done || !this.#active) return undefined;
        return readArgs([envelope.value], this.#argumentReader(call))[0];
      case "error":
        throw isErrorRecord(envelope.record)
          ? fromErrorRecord(envelope.record)
          : new Error("The callback failed.");
      default:
        throw new Error("The callback's reply is not a wire Reply (wire version mismatch).");
    }
  }

  /** A call ended: its callbacks' stubs are disposed and its mirrored signals dropped. */
  #releaseArguments(call: CallState): void {
    if (call.callbacks) {
      for (const stub of call.callbacks) {
        try {
          (stub as { [Symbol.dispose]?: () => void })[Symbol.dispose]?.();
        } catch {
          // The isolate may already be gone.
        }
      }
    }
    if (call.signals) {
      for (const [id, controller] of call.signals) this.#mirrors.remove(id, controller);
    }
  }

  // ── Responses ──────────────────────────────────────────────────────────────

  /**
   * Shapes what a call's host code returned into the call's answer: RpcTargets and functions are
   * registered in the run's handle table (keyed below the call), errors and URLs become tagged
   * records, and the data part is measured against `maxResponseBytes` and counted toward
   * `maxTotalBytes`. A primitive is answered as itself after one size check. A refused response
   * releases what it registered and disposes the objects it returned that the program does not
   * already hold.
   * @throws BridgeError `bridge/limit-response-bytes`, `bridge/limit-total-bytes`,
   * `bridge/limit-handles`, `bridge/unserializable`.
   */
  #shape(value: unknown, call: CallState, root = "result"): Answer {
    const table = this.#table;
    const budget = this.#budget;
    const max = this.#limits.maxResponseBytes;
    if ((typeof value !== "object" && typeof value !== "function") || value === null) {
      const size = dataSize(value, max, root, RESPONSE_LIMIT, "maxResponseBytes");
      budget.chargeResponse(size, () => callLabel(call));
      return plain(value);
    }
    const handle = call.handle;
    const specifier = handle.kind === "module" ? handle.module.specifier : handle.specifier;
    const fresh: number[] = [];
    try {
      const outgoing = writeResult(value, table, specifier, call.key, fresh, root, (stream) =>
        this.#wrapStream(stream),
      );
      const measured = outgoing.streams ? measurable(outgoing.wire) : outgoing.wire;
      const size = dataSize(measured, max, root, RESPONSE_LIMIT, "maxResponseBytes");
      budget.chargeResponse(size, () => callLabel(call));
      return outgoing.special ? tagged(outgoing.wire) : plain(outgoing.wire);
    } catch (error) {
      // Nothing of a refused response stays registered, and what it returned is not leaked.
      for (const id of fresh) table.forget(id);
      disposeStray(value, (v) => table.holds(v));
      throw error;
    }
  }

  // ── Streams ────────────────────────────────────────────────────────────────

  readonly #streamErrors = new Map<number, ErrorRecord>();
  #nextStream = 1;

  /**
   * A host ReadableStream crosses wrapped: the wrapper pulls one chunk per pull (backpressure
   * kept) and, when the host stream errors, keeps the error's record and closes instead of erroring
   * (an errored RPC stream reaches the isolate as "disconnected prematurely" and logs in the host).
   * The isolate asks {@link streamEnd} once when the stream ends, and errors its own stream with it.
   */
  #wrapStream(source: ReadableStream): unknown {
    const id = this.#nextStream++;
    const reader = source.getReader();
    const wrapped = new ReadableStream(
      {
        pull: async (controller) => {
          try {
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            this.#streamErrors.set(id, safeErrorRecord(error));
            controller.close();
          }
        },
        cancel: (reason) => reader.cancel(reason).catch(() => {}),
      },
      { highWaterMark: 0 },
    );
    return { [TAG]: "r", id, s: wrapped };
  }

  /** How host stream `id` ended: the record of its error, or null when it closed normally. */
  streamEnd(id: unknown): ErrorRecord | null {
    if (typeof id !== "number") return null;
    const record = this.#streamErrors.get(id) ?? null;
    this.#streamErrors.delete(id);
    return record;
  }

  // ── Events ─────────────────────────────────────────────────────────────────

  #emit(
    label: string,
    key: string | undefined,
    outcome: "ok" | "error" | "refused",
    error: unknown,
    startedAt: number,
  ): void {
    let code: unknown;
    try {
      code = (error as { code?: unknown } | undefined)?.code;
    } catch {
      // A hostile thrown value (a Proxy whose traps throw): the event has no code.
    }
    // The executor's emitter reports a throwing listener; the call's answer does not change.
    this.#emitEvent?.({
      type: "bridge:call",
      executionId: this.executionId,
      attempt: this.attempt,
      ...(key === undefined ? {} : { key }),
      label,
      outcome,
      ...(typeof code === "string" ? { code } : {}),
      ms: Date.now() - startedAt,
    });
  }
}
