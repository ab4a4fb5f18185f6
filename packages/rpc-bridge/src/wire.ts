import type { ErrorRecord } from "@durablekit/handle-journal";

/**
 * The bridge's wire format between the isolate and the host, version 2 (see DESIGN.md; 2 added the halt answer, callback wrappers and the isolate-side request limit). Values
 * cross as Workers RPC structured clones; the few things the bridge must intercept cross as small
 * tagged records, marked by an own property named {@link TAG} that ordinary data cannot have.
 *
 * Host to isolate (in a response's `v`, only when `x` is 1):
 * - `{ [TAG]: "t", id, k: "<specifier>#<Class>", m: ["method", …] }`: an object (RpcTarget) in the handle table;
 * - `{ [TAG]: "f", id }`: a function in the handle table;
 * - `{ [TAG]: "e", r: ErrorRecord }`: an error value;
 * - `{ [TAG]: "u", href }`: a URL.
 *
 * Isolate to host (in a call's arguments, only when the call's `special` flag is 1):
 * - `{ [TAG]: "h", id }`: an object or function the isolate got from the host, passed back;
 * - `{ [TAG]: "s", id, aborted }`: an AbortSignal, mirrored in the host until the call returns.
 * Functions (callbacks) and ReadableStreams cross as Workers RPC carries them.
 *
 * The answer of a call is the value itself when it is plain data (the common case costs Workers RPC
 * nothing extra), `{ [TAG]: "v", v }` when the value holds tagged records the isolate must revive,
 * `{ [TAG]: "x", r: ErrorRecord }` for an error, or `{ [TAG]: "halt" }` once the run has ended (the
 * isolate then stops: that call and every later one never settle, and nothing more is sent). A plain value cannot be mistaken for either:
 * the host refuses plain objects that use the tag key.
 */
export const WIRE_VERSION = 2;

/** The reserved property name of tagged records. */
export const TAG = "\u0000dk";

/** What `invoke` answers (see above). It always resolves: errors travel as records, never as rejections. */
export type Answer = unknown;

/** The answer of a call that failed. */
export function failure(record: ErrorRecord): Answer {
  return { [TAG]: "x", r: record };
}

/**
 * The answer to a call of a run that has ended (or that ends while the call is in flight): the
 * isolate stops there. That call and every later one never settle on the isolate side and nothing
 * more is sent to the host, so a program left running after its run ended makes no progress.
 */
export const HALT: Answer = Object.freeze({ [TAG]: "halt" });

/** The answer of a call whose value holds tagged records. */
export function tagged(value: unknown): Answer {
  return { [TAG]: "v", v: value };
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
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** The tag of a tagged record, or undefined. */
export function tagOf(value: object): unknown {
  return Object.hasOwn(value, TAG) ? (value as Record<string, unknown>)[TAG] : undefined;
}

/** Sets an own data property, `__proto__` included, without touching the prototype. */
export function setOwn(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}
