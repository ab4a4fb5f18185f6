import { fromErrorRecord, type JournalErrorRecord } from "@durablekit/handle-journal";
import {
  ArrayBufferIsView,
  ArrayIsArray,
  ArrayPrototype,
  ArrayPrototypePush,
  ArrayPrototypeSlice,
  MathFloor,
  ObjectDefineProperty,
  ObjectFreeze,
  ObjectGetOwnPropertyDescriptor,
  ObjectGetPrototypeOf,
  ObjectHasOwn,
  ObjectKeys,
  ObjectPrototype,
  PromisePrototypeThen,
  promiseOf,
  promiseRejected,
  ReflectApply,
  SafeAbortSignal,
  SafeArrayBuffer,
  SafeDataView,
  SafeError,
  SafeMap,
  SafePromise,
  SafeReadableStream,
  SafeString,
  SafeStructuredClone,
  SafeURL,
  SafeWeakMap,
  SymbolDispose,
  SymbolToStringTag,
  thenOf,
} from "../shared/primordials";
import { safeErrorRecord } from "../shared/safe-error-record";
import {
  type Answer,
  type AnsweredCalls,
  type ArgsKind,
  type EvaluateOptions,
  type EventWindow,
  envelopeOf,
  type FunctionDescriptor,
  isPlainObject,
  MAX_DEPTH,
  type PrefetchedAnswers,
  plain,
  type ReplayOptions,
  type Reply,
  setOwn,
  TAG,
  type TargetDescriptor,
  tagged,
  tagOf,
} from "../shared/wire";
import { type BridgeStub, CallBatcher } from "./call-batcher";
import type { DeliveryOrder, RealTimers } from "./delivery-order";
import { DeterministicIsolate } from "./deterministic-isolate";

/**
 * The isolate half of the bridge, bundled at build time into the `__dk_runtime.js` module of every
 * isolate (scripts/build-isolate.mjs). It turns every call into one `invoke(handleId, method,
 * args, kind)` (in a replay run, `invoke(…, events)`, answered through the delivery order of the
 * run's {@link DeterministicIsolate}), builds objects for the handles the host returns, rebuilds
 * errors with handle-journal's `fromErrorRecord` (and builds them with its `toErrorRecord`), and
 * mirrors AbortSignals passed as arguments. Programs cannot import it (their imports are checked and
 * rewritten); it is the only holder of the bridge stub. It uses only the built-ins it took when it
 * loaded (`../primordials`), so a program replacing one cannot change what it sends or stores.
 */

export type { BridgeStub };

type Callable = (...args: unknown[]) => unknown;
type CallbackWrapper = (answer: Answer) => Reply | Promise<Reply>;

/** What a string or byte payload weighs at least against `maxRequestBytes` (bytes count as base64). */
export function bytesWeight(byteLength: number): number {
  return MathFloor(byteLength / 3) * 4;
}

/** The error the isolate throws for a call whose arguments exceed `maxRequestBytes`. */
export function requestTooLarge(maxRequestBytes: number): Error {
  return fromErrorRecord({
    $error: {
      name: "BridgeError",
      message: `The call's arguments take more than ${maxRequestBytes} bytes (maxRequestBytes); it was not sent. Send less per call.`,
      code: "bridge/too-large",
      retryable: false,
      path: "args",
      limit: "maxRequestBytes",
    },
  });
}

/** Rebuilds an error from what the host sent: a well-formed record, or a generic error. */
export function errorFrom(record: unknown): Error {
  try {
    return fromErrorRecord(record as JournalErrorRecord);
  } catch {
    return new SafeError("The bridge sent an error it could not read.");
  }
}

/**
 * True when `v` is data that crosses to the host unchanged (primitives but symbols, plain objects
 * and arrays of them with data properties only, no tagged key): only calls with such arguments are
 * answered in the isolate. It reads property descriptors, never values through getters, so the
 * check runs no program code (but a Proxy's traps, and a Proxy is then refused by the copy).
 */
function isPlainData(v: unknown, depth: number): boolean {
  if (typeof v === "function" || typeof v === "symbol") return false;
  if (typeof v !== "object" || v === null) return true;
  if (depth > MAX_DEPTH) return false;
  if (ArrayIsArray(v)) {
    if (ObjectGetPrototypeOf(v) !== ArrayPrototype) return false;
    for (let i = 0; i < v.length; i++) {
      const d = ObjectGetOwnPropertyDescriptor(v, i);
      if (d === undefined) continue;
      if (!("value" in d) || !isPlainData(d.value, depth + 1)) return false;
    }
    return true;
  }
  if (ObjectGetPrototypeOf(v) !== ObjectPrototype || ObjectHasOwn(v, TAG)) return false;
  const keys = ObjectKeys(v);
  for (let i = 0; i < keys.length; i++) {
    const d = ObjectGetOwnPropertyDescriptor(v, keys[i] as string);
    if (d === undefined || !("value" in d) || !isPlainData(d.value, depth + 1)) return false;
  }
  return true;
}

function sameAnswer(answer: Answer): Answer {
  return answer;
}

/** Never settles: the run has ended and this isolate makes no more progress through the bridge. */
function halted(): Promise<never> {
  return new SafePromise<never>(() => {});
}

function defineHidden(target: object, key: PropertyKey, value: unknown): void {
  ObjectDefineProperty(target, key, { value });
}

export class IsolateRuntime {
  // ── State ──────────────────────────────────────────────────────────────────

  /** The way to the host: calls with primitive arguments go in batches (see {@link CallBatcher}). */
  #bridge: CallBatcher | null = null;
  /** Once true, nothing more is sent to the host and every call stays pending forever. */
  #ended = false;
  #maxRequest = Number.POSITIVE_INFINITY;
  /** A replay run's delivery order, through which journaled answers reach the program; else null. */
  #order: DeliveryOrder | null = null;
  /** The index in `#answers` of a replay run's prefetched answer by top-level key; consumed as keys come. */
  readonly #prefetched = new SafeMap<string, number>();
  /** The answers sent ahead (`#prefetched` maps a key to its index); null when none were. */
  #answers: PrefetchedAnswers | null = null;
  /** Top-level calls sent or answered so far: mirrors the host's key counter (keys `"1"`, `"2"`, …). */
  #top = 0;
  /** Calls answered in the isolate and not yet reported to the host, in call order. */
  #answered: AnsweredCalls = { seqs: [], args: [] };
  /** Handle ids of the objects and functions the host returned (to pass them back by id). */
  readonly #ids = new SafeWeakMap<object, number>();
  readonly #byId = new SafeMap<number, object>();
  readonly #signals = new SafeWeakMap<AbortSignal, number>();
  #nextSignal = 1;
  readonly #callbacks = new SafeWeakMap<Callable, CallbackWrapper>();

  /** Set by `#out` while walking one payload: it holds something the host must resolve. */
  #special = false;
  /** What the payload being walked weighs at least (string lengths, bytes as base64). */
  #weight = 0;

  attach(stub: BridgeStub, options?: Partial<EvaluateOptions>): void {
    this.#bridge = new CallBatcher(stub);
    if (typeof options?.maxRequestBytes === "number") this.#maxRequest = options.maxRequestBytes;
  }

  /**
   * Makes this a replay run: journaled answers go through `order`, each call sends its events, and
   * a top-level call at the key of one of `answers`, to its module function, is answered here.
   */
  replay(
    order: DeliveryOrder,
    answers?: PrefetchedAnswers,
    nextTurn?: RealTimers["nextTurn"],
  ): void {
    this.#order = order;
    if (nextTurn !== undefined) this.#bridge?.answerPerTurn(nextTurn);
    if (answers === undefined) return;
    this.#answers = answers;
    const keys = answers.keys;
    for (let i = 0; i < keys.length; i++) this.#prefetched.set(keys[i] as string, i);
  }

  /** The calls answered in the isolate since the last report, in call order (the list is handed over). */
  takeAnswered(): AnsweredCalls {
    const list = this.#answered;
    this.#answered = { seqs: [], args: [] };
    return list;
  }

  end(): void {
    this.#ended = true;
    this.#order?.end();
  }

  // ── Calls ──────────────────────────────────────────────────────────────────

  /**
   * One call to the host: one `invoke`, answered in one `then` on the Workers RPC promise. A call
   * whose arguments are all primitives is sent as it is (no walk). Arguments over
   * `maxRequestBytes` are refused here, before anything crosses.
   */
  call(id: number, method: string, args: unknown[], top = false): Promise<unknown> {
    if (this.#ended) return halted();
    const bridge = this.#bridge;
    if (bridge === null) {
      return promiseRejected(
        new SafeError(
          "The bridge is not attached: host modules can be called only while the program runs.",
        ),
      );
    }
    let wire = args;
    let kind: ArgsKind = "plain";
    let weight = 0;
    // Primitives only (the rest array is the runtime's own: the program cannot change it before
    // the batch is sent): the call may wait for the batch of this synchronous stretch.
    let batchable = true;
    for (let i = 0; i < args.length; i++) {
      const v = args[i];
      if (typeof v === "string") weight += v.length;
      else if (typeof v === "symbol") batchable = false;
      else if ((typeof v === "object" && v !== null) || typeof v === "function") {
        const payload = this.#payload(args);
        wire = payload.value as unknown[];
        kind = payload.special ? "tagged" : "plain";
        weight = payload.weight;
        batchable = false;
        break;
      }
    }
    if (weight > this.#maxRequest) return promiseRejected(requestTooLarge(this.#maxRequest));
    try {
      const order = this.#order;
      if (order === null) {
        const sent = batchable
          ? bridge.enqueue([id, method, wire, kind], weight)
          : bridge.invoke(id, method, wire, kind);
        return thenOf(sent, this.#onAnswer);
      }
      const local = top ? this.#prefetch(SafeString(++this.#top), id, method, wire, kind) : -1;
      if (local >= 0) {
        const a = this.#answers as PrefetchedAnswers;
        const answer = a.answers[local] as Answer;
        // Used once: the isolate does not keep it for the rest of the attempt.
        (a.answers as unknown[])[local] = null;
        return order.held(a.seqs[local] as number, a.ats[local] as number, answer, this.#onAnswer);
      }
      const answered = this.#answered.seqs.length > 0 ? this.takeAnswered() : undefined;
      return order.call(
        (events) =>
          this.#send(bridge, id, method, wire, kind, events, answered, top, batchable, weight),
        this.#onAnswer,
      );
    } catch (error) {
      return promiseRejected(error);
    }
  }

  /**
   * The index of the prefetched answer of top-level call `key` when it is a call of the same module
   * function with arguments that are plain data; the call is then queued, with a copy of its
   * arguments, for the report to the host. -1 otherwise: the call goes to the host, which checks and
   * answers it as before.
   *
   * The arguments are not compared here: the host digests the reported arguments and checks each
   * call against the journal entry at its key before it runs anything else for this run (the next
   * `invoke` carries the report, and the attempt's outcome is accepted only after it). A program
   * whose arguments changed is failed there with `bridge/diverged`, exactly as if the call
   * had gone to the host; until then it has only been handed recorded answers.
   */
  #prefetch(key: string, id: number, method: string, args: unknown[], kind: ArgsKind): number {
    const index = this.#prefetched.get(key);
    if (index === undefined) return -1;
    this.#prefetched.delete(key);
    const a = this.#answers as PrefetchedAnswers;
    if (a.ids[index] !== id || a.methods[index] !== method || kind !== "plain") return -1;
    let sent = args;
    for (let i = 0; i < args.length; i++) {
      const v = args[i];
      // A symbol does not cross Workers RPC: the call goes to the host and fails there as it did live.
      if (typeof v === "symbol") return -1;
      if (typeof v !== "object" || v === null) continue;
      // Checked as the program passed them: a class instance or a getter, which Workers RPC does
      // not send as data, goes to the host, where it fails (or crosses) exactly as it did live.
      if (!isPlainData(args, 0)) return -1;
      try {
        // A copy, so a later change by the program does not reach the report.
        sent = SafeStructuredClone(args);
      } catch {
        return -1;
      }
      break;
    }
    ArrayPrototypePush(this.#answered.seqs, a.seqs[index] as number);
    ArrayPrototypePush(this.#answered.args, sent);
    return index;
  }

  /**
   * A replay run's `invoke`, kept in step with the host's keys. A call that never reaches the host
   * (Workers RPC refuses its arguments) takes no key there: when the refusal is immediate, the
   * isolate gives its key back and keeps the report for the next call; when it comes later, the
   * isolate stops answering calls itself for the rest of the attempt, so every later call is keyed
   * by the host (a report already lost with it fails the run, as any lost report does).
   */
  #send(
    bridge: CallBatcher,
    id: number,
    method: string,
    wire: unknown[],
    kind: ArgsKind,
    events: EventWindow,
    answered: AnsweredCalls | undefined,
    top: boolean,
    batchable: boolean,
    weight: number,
  ): Promise<Answer> {
    let sent: Promise<Answer>;
    try {
      // A batched call is sent after this returns; a failure to send it rejects (as a refusal that
      // comes later does).
      sent = batchable
        ? bridge.enqueue([id, method, wire, kind, events, answered], weight)
        : bridge.invoke(id, method, wire, kind, events, answered);
    } catch (error) {
      if (top) this.#top--;
      if (answered !== undefined) this.#answered = answered;
      throw error;
    }
    if (!top || this.#prefetched.size === 0) return sent;
    // (A Workers RPC promise's `then` takes a function for both arguments.)
    return thenOf(sent, sameAnswer, (error: unknown) => {
      this.#prefetched.clear();
      throw error;
    });
  }

  /** A host module's export: a function calling `method` of handle `id` (a top-level call). */
  fn(id: number, method: string): Callable {
    return (...args: unknown[]) => this.call(id, method, args, true);
  }

  /** One function for every call's `then` (no closure per call). */
  readonly #onAnswer = (answer: Answer): unknown => this.#answer(answer);

  /** The value of an answer, or the error it carries thrown; a halt never settles. */
  #answer(answer: Answer): unknown {
    // Plain data, the common case, is the answer itself: one type check.
    if (typeof answer !== "object" || answer === null) return answer;
    const envelope = envelopeOf(answer);
    if (envelope === null) return answer;
    switch (envelope[TAG]) {
      case "tagged":
        return this.#revive(envelope.value, 0);
      case "error":
        throw errorFrom(envelope.record);
      case "halt":
        this.end();
        return halted();
      case "journaled":
        // Only a replay run's delivery order unwraps these; elsewhere the answer is taken as it is.
        return this.#answer(envelope.answer);
      default:
        throw new SafeError("The bridge sent an answer this runtime does not know (wire version).");
    }
  }

  // ── Isolate to host ────────────────────────────────────────────────────────

  /** Walks a payload the isolate sends: handles by id, signals mirrored, views as their bytes. */
  #payload(value: unknown): { value: unknown; special: boolean; weight: number } {
    this.#special = false;
    this.#weight = 0;
    const out = this.#out(value, 0);
    return { value: out, special: this.#special, weight: this.#weight };
  }

  #out(v: unknown, depth: number): unknown {
    if (typeof v === "function") {
      this.#special = true;
      const id = this.#ids.get(v);
      return id === undefined ? this.#callbackOf(v as Callable) : { [TAG]: "h", id };
    }
    if (typeof v === "string") {
      this.#weight += v.length;
      return v;
    }
    if (typeof v !== "object" || v === null || depth > MAX_DEPTH) return v;
    if (ArrayBufferIsView(v)) return this.#ownBytes(v);
    if (v instanceof SafeArrayBuffer) {
      this.#weight += bytesWeight(v.byteLength);
      return v;
    }
    const id = this.#ids.get(v);
    if (id !== undefined) {
      this.#special = true;
      return { [TAG]: "h", id };
    }
    if (v instanceof SafeAbortSignal) {
      this.#special = true;
      return this.#signalRecord(v);
    }
    if (v instanceof SafeReadableStream) {
      this.#special = true;
      return v;
    }
    if (ArrayIsArray(v)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const x = this.#out(v[i], depth + 1);
        if (x !== v[i]) {
          copy ??= ArrayPrototypeSlice(v);
          copy[i] = x;
        }
      }
      return copy ?? v;
    }
    if (!isPlainObject(v)) return v;
    let copy: Record<string, unknown> | undefined;
    const source = v as Record<string, unknown>;
    const keys = ObjectKeys(source);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      const x = this.#out(source[k], depth + 1);
      if (x !== source[k]) {
        copy ??= { ...source };
        setOwn(copy, k, x);
      }
    }
    return copy ?? v;
  }

  /** A view crosses as its own bytes only, never with the rest of its buffer. */
  #ownBytes(v: ArrayBufferView): ArrayBufferView {
    this.#weight += bytesWeight(v.byteLength);
    if (v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) return v;
    const bytes = v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
    if (v instanceof SafeDataView) return new SafeDataView(bytes);
    const Ctor = v.constructor as new (buffer: ArrayBufferLike) => ArrayBufferView;
    return new Ctor(bytes);
  }

  #signalRecord(s: AbortSignal): Record<string, unknown> {
    let id = this.#signals.get(s);
    if (id === undefined) {
      id = this.#nextSignal++;
      this.#signals.set(s, id);
      const sid = id;
      if (!s.aborted) {
        s.addEventListener(
          "abort",
          () => {
            const bridge = this.#bridge;
            if (this.#ended || bridge === null) return;
            try {
              bridge.abort(sid, safeErrorRecord(s.reason)).then(undefined, ignore);
            } catch {
              // The host may already be gone.
            }
          },
          { once: true },
        );
      }
    }
    return s.aborted
      ? { [TAG]: "s", id, aborted: true, reason: safeErrorRecord(s.reason) }
      : { [TAG]: "s", id, aborted: false };
  }

  // ── Callbacks ──────────────────────────────────────────────────────────────

  /**
   * A program callback crosses as a wrapper: host code calls it with an answer (its arguments
   * shaped like a call's result) and gets back a reply shaped like a call's arguments, or an
   * error record; it never rejects.
   */
  #callbackOf(f: Callable): CallbackWrapper {
    let wrapper = this.#callbacks.get(f);
    if (wrapper) return wrapper;
    wrapper = (answer: Answer) => {
      if (this.#ended) return refuse(new SafeError("The run has ended."));
      try {
        const args = this.#answer(answer);
        return PromisePrototypeThen(
          promiseOf(ReflectApply(f, undefined, ArrayIsArray(args) ? args : [])),
          (value) => this.#reply(value),
          refuse,
        );
      } catch (error) {
        return refuse(error);
      }
    };
    this.#callbacks.set(f, wrapper);
    return wrapper;
  }

  /** A plain reply goes as itself; one holding records, or carrying the tag key itself, is enveloped. */
  #reply(value: unknown): Reply {
    const payload = this.#payload(value);
    const w = payload.value;
    const carriesTag = typeof w === "object" && w !== null && ObjectHasOwn(w, TAG);
    return payload.special || carriesTag ? (tagged(w) as Reply) : plain(w);
  }

  // ── Host to isolate ────────────────────────────────────────────────────────

  #release(id: number): void {
    this.#byId.delete(id);
    const bridge = this.#bridge;
    if (this.#ended || bridge === null) return;
    try {
      bridge.dispose(id).then(undefined, ignore);
    } catch {
      // The host may already be gone.
    }
  }

  #target(d: TargetDescriptor): object {
    const known = this.#byId.get(d.id);
    if (known) return known;
    const id = d.id;
    const obj: Record<string, unknown> = {};
    const methods = d.m;
    for (let i = 0; i < methods.length; i++) {
      const m = methods[i] as string;
      setOwn(obj, m, (...args: unknown[]) => this.call(id, m, args));
    }
    defineHidden(obj, SymbolDispose, () => this.#release(id));
    defineHidden(obj, SymbolToStringTag, d.k);
    ObjectFreeze(obj);
    this.#ids.set(obj, id);
    this.#byId.set(id, obj);
    return obj;
  }

  #func(d: FunctionDescriptor): object {
    const known = this.#byId.get(d.id);
    if (known) return known;
    const id = d.id;
    const fn = (...args: unknown[]) => this.call(id, "", args);
    defineHidden(fn, SymbolDispose, () => this.#release(id));
    this.#ids.set(fn, id);
    this.#byId.set(id, fn);
    return fn;
  }

  /**
   * A host stream: read through; at its end the host says whether it ended by an error, and the
   * program's read rejects with that error (one round trip per stream, none per chunk).
   */
  #hostStream(id: number, inner: ReadableStream): ReadableStream {
    const reader = inner.getReader();
    return new SafeReadableStream(
      {
        pull: async (controller) => {
          const { done, value } = await reader.read();
          if (!done) {
            controller.enqueue(value);
            return;
          }
          let record: JournalErrorRecord | null = null;
          const bridge = this.#bridge;
          if (!this.#ended && bridge !== null) record = await bridge.streamEnd(id);
          if (record) controller.error(errorFrom(record));
          else controller.close();
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
  }

  #revive(v: unknown, depth: number): unknown {
    if (typeof v !== "object" || v === null || depth > MAX_DEPTH) return v;
    if (ArrayIsArray(v)) {
      for (let i = 0; i < v.length; i++) v[i] = this.#revive(v[i], depth + 1);
      return v;
    }
    if (!isPlainObject(v)) return v;
    const r = v as Record<string, unknown>;
    switch (tagOf(r)) {
      case "t":
        return this.#target(r as unknown as TargetDescriptor);
      case "f":
        return this.#func(r as unknown as FunctionDescriptor);
      case "e":
        return errorFrom(r.r);
      case "u":
        return new SafeURL(SafeString(r.href));
      case "r":
        return this.#hostStream(r.id as number, r.s as ReadableStream);
    }
    const keys = ObjectKeys(r);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      setOwn(r, k, this.#revive(r[k], depth + 1));
    }
    return v;
  }
}

function ignore(): void {}

function refuse(error: unknown): Reply {
  return { [TAG]: "error", record: safeErrorRecord(error) };
}

// ── Module interface (what the runner and the shims import) ─────────────────

const runtime = new IsolateRuntime();

/** Gives the runtime the bridge stub for the run. */
export function attach(stub: BridgeStub, options?: Partial<EvaluateOptions>): void {
  runtime.attach(stub, options);
}

/** The run has ended: no more progress through the bridge. */
export function end(): void {
  runtime.end();
}

/**
 * Makes the run a replay run, before the program is imported: installs a
 * {@link DeterministicIsolate} on the isolate's globals and routes journaled answers through its
 * delivery order. Answers it, for the runner to race the program against its divergence.
 * @throws TypeError when the seed is not 64 hexadecimal characters.
 */
export function replay(
  options: ReplayOptions,
  real: RealTimers,
  onTimerError: (error: unknown) => void,
): DeterministicIsolate {
  const isolate = new DeterministicIsolate(options, real, onTimerError);
  isolate.install(globalThis);
  runtime.replay(isolate.order, options.answers, real.nextTurn);
  return isolate;
}

/** The calls answered in the isolate not yet reported to the host, in call order (handed over). */
export function takeAnswered(): AnsweredCalls {
  return runtime.takeAnswered();
}

/** A host module's export (used by the generated shims). */
export function fn(id: number, method: string): Callable {
  return runtime.fn(id, method);
}

export type { RealTimers };
export { safeErrorRecord as toRecord };
