import { callIdOf, topLevelKey } from "@durablekit/handle-journal";
import type { BridgeAccess, BridgeCallContext, BridgeHostFunction } from "../context";
import type { BridgeError } from "../errors";
import type { Answer } from "../shared/wire";
import type { Handle } from "./handle-table";

/**
 * One admitted call, from admission to its answer: what it runs, its key and deadline, and what
 * must be released when it ends (its signal, the callbacks and mirrored signals it was passed).
 */
export interface CallState {
  key: string;
  /** The handle called: a module, an object a call returned, or a function a call returned. */
  handle: Handle;
  /** The function or method name (`""` for a function handle). */
  method: string;
  fn: BridgeHostFunction;
  thisArg: unknown;
  args: unknown[];
  deadline: number;
  startedAt: number;
  done: boolean;
  /** Set while the host code's promise is pending: answers the waiting Workers RPC call. */
  resolve?: (answer: Answer) => void;
  controller?: AbortController;
  /** Why the call ended early (deadline, run end): its signal's reason. */
  cutOff?: BridgeError;
  callbacks?: Array<(...args: unknown[]) => unknown>;
  signals?: Array<[number, AbortController]>;
  /**
   * Why the call is refused once keyed (no such method): admission throws it first, after the
   * call's journal began it under its key (a replay records the refusal there).
   */
  refusal?: BridgeError;
}

/**
 * What a call is called in messages and events: `"codemode:jobs.createJob"`,
 * `"codemode:jobs#Run.wait"`, `"codemode:jobs#fn()"`. Built only when a message or event needs it,
 * not on every call.
 */
export function labelOf(handle: Handle, method: string): string {
  if (handle.kind === "module") return `${handle.module.specifier}.${method}`;
  if (handle.kind === "target") return `${handle.label}.${method}`;
  return `${handle.label}()`;
}

/** {@link labelOf} a call. */
export function callLabel(call: CallState): string {
  return labelOf(call.handle, call.method);
}

/**
 * The call keys of one attempt: top-level calls (to a module's functions) `1`, `2`, …; the n-th
 * call on an object or function that call `k` returned is `k.n`, counted per creating call. The
 * format is handle-journal's (`topLevelKey`, `childKey`); a parent here is always a key this
 * counter made, so a child key is built without re-parsing its parent.
 */
export class CallKeys {
  #top = 0;
  readonly #children = new Map<string, number>();

  /** The key of the next call on `handle`. */
  next(handle: Handle): string {
    if (handle.kind === "module") return topLevelKey(++this.#top);
    const parent = handle.creatorKey;
    const ordinal = (this.#children.get(parent) ?? 0) + 1;
    this.#children.set(parent, ordinal);
    return `${parent}.${ordinal}`;
  }
}

/** What a call's context reaches back to in its run. */
export interface ContextOwner {
  readonly executionId: string;
  readonly access: BridgeAccess;
  readonly attempt: number;
  interrupt(call: CallState, payload: unknown): Promise<never>;
}

/**
 * The context a call's host code sees. Its data are own properties (so spreading or logging it
 * shows them); the run and the call state stay private. The signal is created on first use.
 */
export class HostCallContext implements BridgeCallContext {
  readonly callId: string;
  readonly executionId: string;
  readonly key: string;
  readonly deadline: number;
  readonly access: BridgeAccess;
  readonly attempt: number;
  readonly #owner: ContextOwner;
  readonly #call: CallState;

  constructor(owner: ContextOwner, call: CallState) {
    this.#owner = owner;
    this.#call = call;
    this.executionId = owner.executionId;
    this.key = call.key;
    this.callId = callIdOf(owner.executionId, call.key);
    this.deadline = call.deadline;
    this.access = owner.access;
    this.attempt = owner.attempt;
  }

  get signal(): AbortSignal {
    const call = this.#call;
    if (!call.controller) {
      call.controller = new AbortController();
      if (call.cutOff) call.controller.abort(call.cutOff);
    }
    return call.controller.signal;
  }

  interrupt<T = unknown>(payload?: unknown): Promise<T> {
    // The host code never sees the resume value: a resumed replay answers the program with it
    // without running this call again. So the promise only ever rejects (when the attempt ends).
    return this.#owner.interrupt(this.#call, payload);
  }
}
