import {
  fromErrorRecord,
  isErrorRecord,
  isUnsafeToRepeat,
  type JournalErrorRecord,
} from "@durablekit/handle-journal";
import type { BridgeAccess, BridgeHostFunction } from "../context";
import {
  type BoundedErrorRecord,
  BridgeError,
  boundErrorRecord,
  bridgeErrorRecord,
  handledRejection,
  safeErrorRecord,
} from "../errors";
import type { BridgeEvent } from "../events";
import type { BridgeLimits } from "../limits";
import type { ModuleRegistry } from "../modules/module-registry";
import { isReadOnly } from "../modules/read-only";
import { type CallJournal, LIVE, NOT_REVIVED } from "../replay/call-journal";
import {
  type Answer,
  envelopeOf,
  failure,
  HALT,
  plain,
  type Reply,
  TAG,
  tagged,
} from "../shared/wire";
import { dataSize, measurable } from "../values/data-size";
import { type ArgumentReader, readArgs, writeResult } from "../values/values";
import type { AttemptOutcome } from "./attempt-outcome";
import { CallBudget } from "./call-budget";
import { CallKeys, type CallState, callLabel, HostCallContext, labelOf } from "./call-state";
import { Deadlines } from "./deadlines";
import { disposeStray, HandleTable } from "./handle-table";
import { SignalMirrors } from "./signal-mirrors";

/** What a {@link Run} is built from. */
export interface RunOptions {
  executionId: string;
  attempt: number;
  access: BridgeAccess;
  limits: BridgeLimits;
  registry: ModuleRegistry;
  /** The executor's event sink, or undefined when nobody listens (then no call labels are built). */
  emit?: ((event: BridgeEvent) => void) | undefined;
  /** Called, before it runs, for each call of a function marked unsafeToRepeat (the executor acts on the first). */
  onUnsafeCall?: ((label: string) => void) | undefined;
  /**
   * What the run's calls ask of replay: a replay run's `ReplayCalls`, or {@link LIVE} (the
   * default) for other runs, which journal nothing.
   */
  calls?: CallJournal | undefined;
}

/** The longest function or method name a call may name (UTF-16 code units). */
const MAX_METHOD_CHARS = 256;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null | undefined)?.then === "function";
}

/**
 * One attempt of one execution, host side: the handle table, the budget the limits check, the
 * calls in flight and their deadlines. Every call from the isolate, to an exported function or a
 * handle's method, enters through {@link invoke} and takes the same steps: resolve what is called
 * and check access ({@link #resolve}), check the limits (`CallBudget`), read the arguments
 * ({@link #argumentReader}), key it (`CallKeys`), run it with its own context, and shape the
 * response ({@link #shape}). What replay adds it adds through the {@link CallJournal} port, at
 * fixed points of that one path: a keyed call may be answered from the journal instead of running
 * (`begin`), and a live one is recorded (refusals included) before its answer is delivered
 * (`settle`); see `call-journal.ts`.
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
  readonly #calls: CallJournal;
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
    this.#calls = options.calls ?? LIVE;
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
    const run = this;
    this.#calls.attach({
      executionId: this.executionId,
      limits,
      registry: options.registry,
      table: this.#table,
      budget: this.#budget,
      get active() {
        return run.#active;
      },
      stop: (outcome) => this.stop(outcome),
      resolve: (handleId, method, args, startedAt, deadline) =>
        this.#resolve(handleId, method, args, startedAt, deadline),
      readDry: (call) => {
        readArgs(call.args, this.#argumentReader(call, true));
      },
    });
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
    // Held calls are answered HALT too; a replay's pending interrupts reject.
    this.#calls.end();
    this.#mirrors.abortAll(ended);
    return this.#table.disposeAll();
  }

  /**
   * `ctx.interrupt(payload)`. In a `"fail"` or `"restart"` run: stops the attempt as interrupted
   * (a string payload is the reason) and rejects for the calling host code. In a replay run the
   * journal keeps the interrupt and the attempt ends suspended (`CallJournal.interrupt`).
   */
  interrupt(call: CallState, payload: unknown): Promise<never> {
    const kept = this.#calls.interrupt(call, payload);
    if (kept !== null) return kept;
    const text = typeof payload === "string" ? payload : `${callLabel(call)} interrupted the run`;
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

  // ── One call ───────────────────────────────────────────────────────────────

  /**
   * The one entry point of every call from the isolate. Always answers (see `Answer`), never
   * rejects: what host code throws travels as an error record. A call whose host code returns
   * synchronously is answered synchronously, with no promise for Workers RPC to wait on.
   *
   * The steps, each a fixed point: the journal begins the call (it keys it, and may answer it
   * from the journal, hold it or halt it); admission (access, limits, arguments); a call refused
   * after its key is answered through the journal; the journal sees it admitted; it runs.
   */
  invoke(
    handleId: unknown,
    method: unknown,
    args: unknown,
    kind: unknown,
    events?: unknown,
    answered?: unknown,
  ): Answer | Promise<Answer> {
    const startedAt = Date.now();
    // A program looping on calls can starve the run's timer: every call also checks the deadline.
    if (startedAt >= this.deadline) this.#timeOut();
    let call: CallState;
    try {
      const start = this.#calls.begin(events, answered, () =>
        this.#key(handleId, method, args, startedAt),
      );
      if (start.kind === "answered") return start.answer;
      call = start.call;
    } catch (error) {
      return this.#refuseUnkeyed(handleId, method, error, startedAt);
    }
    const special = kind === "tagged";
    let size: number;
    try {
      size = this.#admit(call, special);
    } catch (error) {
      // A refused call releases the signal mirrors and callbacks it registered before the refusal.
      this.#releaseArguments(call);
      const record = this.#calls.refuse(call, error);
      // Refusals the journal does not keep are answered as refusals before keying.
      if (record === null) return this.#refuseUnkeyed(handleId, method, error, startedAt);
      if (this.#emitEvent) this.#emit(callLabel(call), call.key, "refused", error, startedAt);
      return this.#calls.settle(call, failure(record));
    }
    const instead = this.#calls.admitted(call, size);
    if (instead !== null) return instead;
    return this.#perform(call);
  }

  /** A call refused before it got a key (or whose refusal keeps no record): answered, not recorded. */
  #refuseUnkeyed(handleId: unknown, method: unknown, error: unknown, startedAt: number): Answer {
    if (this.#emitEvent) {
      this.#emit(`${String(handleId)}.${String(method)}`, undefined, "refused", error, startedAt);
    }
    // After the run ended the isolate is halted: this is the last call the host sees from it.
    return this.#active ? failure(safeErrorRecord(error)) : HALT;
  }

  /**
   * Resolves and keys a call (see {@link #resolve}).
   * @throws BridgeError `bridge/run-ended` once the run ended; what {@link #resolve} throws.
   */
  #key(handleId: unknown, method: unknown, args: unknown, startedAt: number): CallState {
    if (!this.#active) {
      throw new BridgeError("bridge/run-ended", "The run has ended; no more calls are answered.");
    }
    return this.#resolve(handleId, method, args, startedAt, this.#deadlines.forCall(startedAt));
  }

  /**
   * Admits a keyed call: its refusal (no such method), access, limits, then its arguments. Every
   * refusal is decided before host code runs: the journal prepares the call (`prepare`: a
   * journaled object called or passed is revived only once nothing else refuses it), and only then
   * are the arguments read for real. Answers the request's size, counted.
   * @throws BridgeError the refusal.
   */
  #admit(call: CallState, special: boolean): number {
    if (call.refusal) throw call.refusal;
    this.#checkAccess(call);
    const size = this.#budget.check(call, special);
    // Access by the method of the object as revived now (a deploy may have changed its marks).
    if (this.#calls.prepare(call, special)) this.#checkAccess(call);
    if (special) call.args = readArgs(call.args, this.#argumentReader(call));
    if (this.#onUnsafeCall && isUnsafeToRepeat(call.fn)) this.#onUnsafeCall(callLabel(call));
    this.#budget.admit(size);
    return size;
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
    const calls = this.#calls;
    if (calls.interrupted(call)) return this.#interruptedAnswer(call, out);
    if (!isThenable(out)) return this.#respond(call, out);
    return new Promise<Answer>((resolve) => {
      call.resolve = resolve;
      out.then(
        (value) => {
          if (call.done || !this.#active || calls.interrupted(call)) {
            disposeStray(value, (v) => this.#table.holds(v));
          } else resolve(this.#respond(call, value));
        },
        (error: unknown) => {
          if (!call.done && !calls.interrupted(call)) resolve(this.#fail(call, error));
        },
      );
    });
  }

  /**
   * A call that released the run synchronously (a replay run's `ctx.interrupt()`): what its host
   * code returned is dropped (the resume value answers the program); the call waits for the
   * attempt's end.
   */
  #interruptedAnswer(call: CallState, out: unknown): Promise<Answer> {
    if (isThenable(out)) {
      out.then(
        (value) => disposeStray(value, (v) => this.#table.holds(v)),
        () => {},
      );
    } else disposeStray(out, (v) => this.#table.holds(v));
    return new Promise<Answer>((resolve) => {
      call.resolve = resolve;
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
    // Invariant: the answer leaves only once the journal recorded it (`settle` returns after the write).
    return this.#calls.settle(call, answer);
  }

  /** A call failed: its error is settled through the journal, unless `settle` is false (the attempt is ending under it). */
  #fail(call: CallState, error: unknown, settle = true): Answer {
    this.#finish(call, true, error);
    const { record, bytes } = this.#errorRecord(error);
    const answer = failure(record);
    return settle ? this.#calls.settleError(call, record, bytes, answer) : answer;
  }

  /**
   * The record of an error a call answers with, measured and charged like a response: over
   * `maxResponseBytes` (or what is left of `maxTotalBytes`) it keeps only name, code, `limit` and a
   * truncated message, and says so. Answers it with the bytes charged. Never throws.
   */
  #errorRecord(error: unknown): BoundedErrorRecord {
    const limits = this.#limits;
    const left = Math.max(0, limits.maxTotalBytes - this.#budget.bytes);
    const max = Math.min(limits.maxResponseBytes, left);
    const limitName = max === left ? "maxTotalBytes (left)" : "maxResponseBytes";
    const { record, bytes } = boundErrorRecord(safeErrorRecord(error), max, limitName);
    this.#budget.chargeError(bytes);
    return { record, bytes };
  }

  /** The call is answered: it leaves the in-flight set and releases what it was passed. */
  #finish(call: CallState, failed: boolean, error: unknown): void {
    call.done = true;
    this.#budget.inflight.delete(call);
    if (call.callbacks || call.signals) this.#releaseArguments(call);
    this.#calls.finished(call);
    if (this.#emitEvent) {
      this.#emit(callLabel(call), call.key, failed ? "error" : "ok", error, call.startedAt);
    }
  }

  /** Ends a call before its host code settled: its signal aborts and the program gets `reason`. */
  #cutOff(call: CallState, reason: BridgeError, answer?: Answer): void {
    if (call.done) return;
    call.cutOff = reason;
    call.controller?.abort(reason);
    // Cut off by the attempt's end (`answer` HALT), a call is not journaled: a replay runs it again.
    const failed = this.#fail(call, reason, answer === undefined);
    call.resolve?.(answer ?? failed);
  }

  // ── Resolution ─────────────────────────────────────────────────────────────

  /**
   * Resolves what a call targets: the handle is live (then the call takes its key) and the method
   * is a function of it (a prototype method for an object, `""` for a function handle). Answers
   * the call's state, keyed but not yet checked for access or counted; a method it does not have
   * is its `refusal`, made by admission.
   * @throws BridgeError `bridge/unknown-method` (malformed call), `bridge/handle-disposed`.
   */
  #resolve(
    handleId: unknown,
    method: unknown,
    args: unknown,
    startedAt: number,
    deadline: number,
  ): CallState {
    if (
      typeof handleId !== "number" ||
      typeof method !== "string" ||
      method.length > MAX_METHOD_CHARS ||
      !Array.isArray(args)
    ) {
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
    let unknown: BridgeError | undefined;
    let thisArg: unknown;
    if (handle.kind === "module") {
      fn = handle.module.functions.get(method);
      thisArg = handle.module.object;
    } else if (handle.kind === "target") {
      // Only prototype methods recorded when the object was registered, never own data properties.
      if (handle.methods.has(method)) {
        fn =
          handle.target === null ? NOT_REVIVED : (handle.target as Record<string, unknown>)[method];
      }
      thisArg = handle.target;
    } else if (method === "") {
      fn = handle.fn;
    }
    if (typeof fn !== "function") {
      const refusal = new BridgeError(
        "bridge/unknown-method",
        `${labelOf(handle, method)} is not a function of this ${handle.kind === "module" ? "module" : "object"}.`,
      );
      // Refused by admission, after the journal began the call under the key it took (a replay
      // journals the refusal there).
      fn = () => {
        throw refusal;
      };
      unknown = refusal;
    }
    return {
      ...(unknown === undefined ? {} : { refusal: unknown }),
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
    if (this.access !== "read") return;
    if (call.fn === NOT_REVIVED) {
      // An object not revived yet: decided by what the journal recorded with it, so its reviver
      // (host code) never runs for a refused call.
      if (this.#calls.readOnlyUnrevived(call)) return;
    } else if (isReadOnly(call.fn)) return;
    throw new BridgeError(
      "bridge/access-denied",
      `${labelOf(call.handle, call.method)} may change state and this run has read-only access; it did not run. Run with access "read-write" to call it.`,
    );
  }

  // ── Arguments ──────────────────────────────────────────────────────────────

  /**
   * Resolves what the isolate passed back in one call's arguments: handle ids into the targets and
   * functions they name, signal records into mirrored AbortSignals, and callbacks into functions
   * that throw `bridge/callback-expired` once the call returned. What it creates is recorded on the
   * call, for {@link #releaseArguments}.
   *
   * A `dry` reader only makes the reader's refusals (a disposed handle; what the journal cannot
   * keep, `CallJournal.checkPassable`) and creates, revives and records nothing: a replay run reads
   * a call's arguments dry first, so a refused call revives none of the objects it was passed.
   */
  #argumentReader(call: CallState, dry = false): ArgumentReader {
    const table = this.#table;
    const mirrors = this.#mirrors;
    const calls = this.#calls;
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
        if (dry) return null;
        if (entry.kind === "function") return entry.fn;
        return entry.target ?? calls.revive(entry);
      },
      signal: (id: unknown, aborted: boolean, reason: unknown): AbortSignal => {
        if (dry) return null as never;
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
      stream: (stream: ReadableStream, path: string): ReadableStream => {
        calls.checkPassable(call, `a ReadableStream (at ${path})`);
        return stream;
      },
      callback: (stub: (...args: unknown[]) => unknown) => {
        calls.checkPassable(call, "a callback");
        if (dry) return null as never;
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
   * @throws BridgeError `bridge/too-large` (`limit` `maxResponseBytes` or `maxTotalBytes`),
   * `bridge/limit-handles`, `bridge/unserializable`.
   */
  #shape(value: unknown, call: CallState, root = "result"): Answer {
    const table = this.#table;
    const budget = this.#budget;
    const max = this.#limits.maxResponseBytes;
    if ((typeof value !== "object" && typeof value !== "function") || value === null) {
      const size = dataSize(value, max, root, "maxResponseBytes");
      budget.chargeResponse(size, () => callLabel(call));
      if (root === "result") this.#calls.noteAnswer(call, value, null, size);
      return plain(value);
    }
    const handle = call.handle;
    const specifier = handle.kind === "module" ? handle.module.specifier : handle.specifier;
    const fresh: number[] = [];
    try {
      const outgoing = writeResult(value, table, specifier, call.key, fresh, root, (stream) =>
        this.#wrapStream(stream),
      );
      // A call's answer (not a callback's arguments) is what the journal keeps: checked before it
      // is measured, noted (its objects named) before it is charged.
      const answering = root === "result";
      if (answering) this.#calls.checkOutgoing(call, outgoing, fresh);
      const measured = outgoing.streams ? measurable(outgoing.wire) : outgoing.wire;
      const size = dataSize(measured, max, root, "maxResponseBytes");
      if (answering) this.#calls.noteAnswer(call, value, outgoing, size);
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

  readonly #streamErrors = new Map<number, JournalErrorRecord>();
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
  streamEnd(id: unknown): JournalErrorRecord | null {
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
