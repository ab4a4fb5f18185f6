import type { JournalErrorRecord } from "@durablekit/handle-journal";
import {
  ObjectDefineProperty,
  ObjectFreeze,
  ObjectGetPrototypeOf,
  ObjectHasOwn,
  ObjectPrototype,
} from "./primordials";

/**
 * The bridge's wire format between the isolate and the host, version 5 (see DESIGN.md). Host and
 * isolate runtime share these types. Values cross as Workers RPC structured clones; the few things
 * the bridge must intercept cross as small tagged records and envelopes, marked by an own property
 * named `TAG` that ordinary data cannot have (the host refuses plain objects that use the tag
 * key, and the isolate wraps a callback reply that uses it).
 *
 * Host to isolate (inside a `"tagged"` envelope's `value`):
 * - `{ [TAG]: "t", id, k: "<specifier>#<Class>", m: ["method", …] }`: an object (RpcTarget) in the handle table;
 * - `{ [TAG]: "f", id }`: a function in the handle table;
 * - `{ [TAG]: "e", r: ErrorRecord }`: an error value;
 * - `{ [TAG]: "u", href }`: a URL;
 * - `{ [TAG]: "r", id, s: ReadableStream }`: a host stream (its end is asked for with `streamEnd(id)`).
 *
 * Isolate to host (inside `"tagged"` call arguments or a `"tagged"` callback reply):
 * - `{ [TAG]: "h", id }`: an object or function the isolate got from the host, passed back;
 * - `{ [TAG]: "s", id, aborted, reason? }`: an AbortSignal, mirrored in the host until the call returns.
 * Functions (callbacks) and ReadableStreams cross as Workers RPC carries them.
 *
 * Version 3 replaced the `{ [TAG]: "v" | "x" }` answers and the numeric `special` flag of
 * version 2 with the named kinds below. Version 4 added, for runs whose policy is `"replay"` only:
 * the `events` window as `invoke`'s fifth argument (`EventWindow`), the `"journaled"`
 * answer envelope, `EvaluateOptions.replay` (`ReplayOptions`) and the `"diverged"` outcome.
 * Version 5 added, for replay runs only: the journal's plain answers sent ahead in
 * `ReplayOptions.answers` (`PrefetchedAnswers`), answered inside the isolate without a call to the
 * host, and reported back in order (`AnsweredCalls`) as `invoke`'s sixth argument and in the
 * outcome's `answered`.
 *
 * Host and isolate runtime always come from one build, so the number serves replay runs: it is part
 * of their fingerprint, and changes when what a run records, or how a recorded run replays, changes.
 */
export const WIRE_VERSION = 5;

/** The reserved property name of tagged records and envelopes. */
export const TAG = "\u0000dk";

/** Containers nest at most this deep in a value the bridge walks, on either side (the codec's own default). */
export const MAX_DEPTH = 100;

/**
 * How the isolate sends a call's arguments (`invoke(handleId, method, args, kind)`): `"plain"`
 * when they are data as they are, `"tagged"` when they may hold tagged records, callbacks,
 * signals or streams the host must resolve.
 */
export type ArgsKind = "plain" | "tagged";

/**
 * The isolate's event log window sent with a call of a replay run (`invoke`'s fifth argument):
 * `list` is the log from index `from` (the point the latest answered call was issued at) up to
 * where this call is issued. An event `n > 0` is the delivery of journal entry `n`'s answer to the
 * program; `-k` is a firing of virtual timer `k` (timers are numbered 1, 2, … in creation order).
 */
export interface EventWindow {
  from: number;
  list: number[];
}

declare const PLAIN: unique symbol;

/**
 * Plain data sent as itself, with no envelope: the common case of an answer or a callback reply.
 * Never a plain object carrying {@link TAG} (so it cannot be mistaken for an {@link Envelope}).
 * An envelope around every answer measured a bridged call 0.85× → 1.19× a direct Workers RPC call.
 */
export type PlainData = { readonly [PLAIN]: true };

/**
 * The envelopes of the answers that are not plain data:
 * - `"tagged"`: data holding tagged records the receiver revives;
 * - `"error"`: the call failed; the isolate rethrows the record as an Error;
 * - `"halt"`: the run has ended. The isolate stops there: that call and every later one never
 *   settle on the isolate side and nothing more is sent to the host.
 * - `"journaled"` (replay runs only): the answer of the journal entry with sequence `seq`,
 *   recorded at `at` (epoch ms); the isolate delivers it in its recorded order and advances its
 *   clock to `at`.
 */
export type Envelope =
  | { [TAG]: "tagged"; value: unknown }
  | { [TAG]: "error"; record: JournalErrorRecord }
  | { [TAG]: "halt" }
  | { [TAG]: "journaled"; seq: number; at: number; answer: Answer };

/**
 * What the host answers to a call (`invoke` always resolves: errors travel as records, never as
 * rejections), and what it passes to a program callback (the callback's arguments).
 */
export type Answer = PlainData | Envelope;

/** What a program callback gives back to the host: its value (like a call's arguments) or its error. */
export type Reply = PlainData | Exclude<Envelope, { [TAG]: "halt" | "journaled" }>;

/** The envelope of an answer or reply, or null when it is plain data. */
export function envelopeOf(message: Answer | Reply | unknown): Envelope | null {
  if (typeof message !== "object" || message === null || !ObjectHasOwn(message, TAG)) return null;
  const kind = (message as Record<string, unknown>)[TAG];
  return kind === "tagged" || kind === "error" || kind === "halt" || kind === "journaled"
    ? (message as Envelope)
    : null;
}

/**
 * Calls the program started in one synchronous stretch, sent together in one
 * `invokeBatch(calls)`: each is `invoke`'s arguments as a tuple, in call order (so the host keys
 * them as it would keys separate invokes). Only calls whose arguments are primitives (no symbol)
 * are batched; any other message to the host first sends the batch it follows. A batch travels
 * and commits as one: the journal rows of its calls that settle without I/O land in one SQLite
 * commit, where separate invokes each wait for their own.
 */
export type BatchedCall = [
  handleId: number,
  method: string,
  args: unknown[],
  kind: ArgsKind,
  events?: EventWindow,
  answered?: AnsweredCalls,
];

/** Most calls in one batch; the host refuses a longer one. */
export const MAX_BATCH_CALLS = 128;

/** Most string characters the arguments of one batch carry; a call past it starts the next batch. */
export const MAX_BATCH_WEIGHT = 1 << 20;

/**
 * The host's reply to a batch, by position: `tickets[i]` is 0 when `answers[i]` is call `i`'s
 * answer; otherwise the call had not settled when the batch was answered (it waits for I/O), and
 * `answer(tickets[i])` resolves to its answer, once.
 */
export interface BatchReply {
  answers: Answer[];
  tickets: number[];
}

/**
 * What the runner's `evaluate(input, bridge, options)` resolves to, once per attempt; it never
 * rejects for a program error. `"returned"`: the program's default export resolved to `value`.
 * `"threw"`: it threw (or could not load); `"unhandled-rejection"`: it left a rejected promise
 * unhandled; `"timer-error"`: it threw inside a timer callback; `"diverged"` (replay runs): the
 * program did not repeat the recorded order of events (the record names the expected event).
 * `"halted"`: the host ended the attempt first and called the runner's `halt()`; the host has its
 * own outcome already.
 */
export type Outcome = (
  | { kind: "returned"; value: unknown }
  | {
      kind: "threw" | "unhandled-rejection" | "timer-error" | "diverged";
      record: JournalErrorRecord;
    }
  | { kind: "halted" }
) & {
  /** Replay runs: the calls answered inside the isolate since the last `invoke`, in call order. */
  answered?: AnsweredCalls;
};

/**
 * The journal entries of a replay run the isolate may answer itself (wire v5), one column per
 * field (entry `i` is `keys[i]`, `ids[i]`, …, so a thousand entries cross Workers RPC as six arrays,
 * not a thousand objects): a top-level call (key `"1"`, `"2"`, …) to exported function
 * `methods[i]` of host module handle `ids[i]`, recorded with a plain answer or an error (never
 * handles, never an interrupt or marker) as entry `seqs[i]` at `ats[i]` (epoch ms), answered with
 * `answers[i]`. The calls' arguments are checked by the host, from the report ({@link AnsweredCalls}).
 */
export interface PrefetchedAnswers {
  keys: string[];
  ids: number[];
  methods: string[];
  seqs: number[];
  ats: number[];
  answers: Answer[];
}

/**
 * The calls the isolate answered from {@link PrefetchedAnswers}, in call order, one column per
 * field: call `i` was answered with entry `seqs[i]` and made with `args[i]` (as they were when it
 * was made). The host keys each as a call of that entry's module function, digests its arguments
 * and checks it against its journal, in order, before the call that carries the report.
 */
export interface AnsweredCalls {
  seqs: number[];
  args: unknown[][];
}

/**
 * What makes an attempt of a replay run deterministic, the same on every attempt: `seed` (64 hex
 * characters, made once per execution) keys the isolate's randomness; `startedAt` (epoch ms, the
 * execution's first start) starts its clock; `schedule` is the recorded event order to re-impose
 * (`[]` on the first attempt), in {@link EventWindow} event numbers.
 */
export interface ReplayOptions {
  seed: string;
  startedAt: number;
  schedule: number[];
  /** The journal's plain answers of top-level calls, which the isolate answers without the host. */
  answers?: PrefetchedAnswers;
}

/** The isolate-side options `evaluate` takes. */
export interface EvaluateOptions {
  maxRequestBytes: number;
  /** Present for every attempt of a replay run; absent otherwise. */
  replay?: ReplayOptions;
}

/** The answer of a call that failed. */
export function failure(record: JournalErrorRecord): Answer {
  return { [TAG]: "error", record };
}

/** The answer to a call of a run that has ended (or that ends while the call is in flight). */
export const HALT: Answer = ObjectFreeze({ [TAG]: "halt" as const });

/** Plain data as an answer or reply: the value itself (the caller checked it carries no {@link TAG}). */
export function plain(value: unknown): PlainData {
  return value as PlainData;
}

/** The answer or reply of a value holding tagged records. */
export function tagged(value: unknown): Envelope {
  return { [TAG]: "tagged", value };
}

/** The answer of journal entry `seq`, recorded at `at` (epoch ms), in a replay run. */
export function journaled(seq: number, at: number, answer: Answer): Envelope {
  return { [TAG]: "journaled", seq, at, answer };
}

/** Tagged record of a handle (object or function) the host sends. */
export interface TargetDescriptor {
  [TAG]: "t";
  id: number;
  k: string;
  m: string[];
}

/** Tagged record of a function handle the host sends. */
export interface FunctionDescriptor {
  [TAG]: "f";
  id: number;
}

/** True when `value` is a plain object or array literal (the only containers the bridge walks). */
export function isPlainObject(value: object): boolean {
  const proto = ObjectGetPrototypeOf(value);
  return proto === ObjectPrototype || proto === null;
}

/** The tag of a tagged record, or undefined. */
export function tagOf(value: object): unknown {
  return ObjectHasOwn(value, TAG) ? (value as Record<string, unknown>)[TAG] : undefined;
}

/** Sets an own data property, `__proto__` included, without touching the prototype. */
export function setOwn(target: object, key: string, value: unknown): void {
  ObjectDefineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}
