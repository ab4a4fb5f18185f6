import { type CallState, labelOf } from "./call-state";
import type { Access, HostFunction } from "./context";
import { dataSize, measurable } from "./data-size";
import { BridgeError } from "./errors";
import type { HandleTable } from "./handle-table";
import type { Limits } from "./limits";
import { isReadOnly } from "./read-only";

/**
 * Resolves what a call targets and checks that this run may call it: the handle is live, the
 * method is a function of it (a prototype method for an object, `""` for a function handle), and
 * in a `"read"` run it is marked read-only. Answers the call's state, not yet keyed or counted.
 * @throws BridgeError `bridge/unknown-method`, `bridge/handle-disposed`, `bridge/access-denied`.
 */
export function resolveCall(
  table: HandleTable,
  access: Access,
  handleId: unknown,
  method: unknown,
  args: unknown,
  startedAt: number,
  deadline: number,
): CallState {
  if (typeof handleId !== "number" || typeof method !== "string" || !Array.isArray(args)) {
    throw new BridgeError("bridge/unknown-method", "Malformed bridge call.");
  }
  const handle = table.get(handleId);
  if (!handle) {
    throw new BridgeError(
      "bridge/handle-disposed",
      `The object was disposed (or belongs to another run); it cannot be called any more.`,
    );
  }
  let fn: unknown;
  let thisArg: unknown;
  if (handle.kind === "module") {
    fn = handle.module.functions.get(method);
    thisArg = handle.module.object;
  } else if (handle.kind === "target") {
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
  if (access === "read" && !isReadOnly(fn)) {
    throw new BridgeError(
      "bridge/access-denied",
      `${labelOf(handle, method)} may change state and this run has read-only access; it did not run. Run with access "read-write" to call it.`,
    );
  }
  return {
    key: "",
    handle,
    method,
    fn: fn as HostFunction,
    thisArg,
    args,
    deadline,
    startedAt,
    done: false,
  };
}

/**
 * What one attempt's calls may still use under its limits, and what they used: calls made, calls
 * in flight, bytes of requests and responses. A call is checked before it runs and counted only
 * once it is admitted; a response is checked and counted once it is shaped.
 */
export class CallBudget {
  readonly limits: Limits;
  /** Calls admitted so far. */
  calls = 0;
  /** Bytes of requests and responses so far. */
  bytes = 0;
  /** Calls admitted and not yet answered, in start (hence deadline) order. */
  readonly inflight = new Set<CallState>();

  constructor(limits: Limits) {
    this.limits = limits;
  }

  /**
   * Checks `maxCalls`, `maxConcurrentCalls`, the request's bytes and `maxTotalBytes` for a
   * resolved call (its arguments as they came from the isolate; `special` when they hold handle
   * or signal records, callbacks or streams); answers the request's size. Streams, callbacks and
   * signals are not counted.
   * @throws BridgeError `bridge/limit-calls`, `bridge/limit-concurrency`,
   * `bridge/limit-request-bytes`, `bridge/limit-total-bytes`, `bridge/unserializable`.
   */
  check(call: CallState, special: boolean): number {
    const limits = this.limits;
    if (this.calls >= limits.maxCalls) {
      throw new BridgeError(
        "bridge/limit-calls",
        `The run already made ${limits.maxCalls} calls (maxCalls); ${labelOf(call.handle, call.method)} did not run. Do more per call or raise maxCalls.`,
      );
    }
    if (this.inflight.size >= limits.maxConcurrentCalls) {
      throw new BridgeError(
        "bridge/limit-concurrency",
        `${limits.maxConcurrentCalls} calls are already in flight (maxConcurrentCalls); ${labelOf(call.handle, call.method)} did not run. Await some calls before starting more.`,
      );
    }
    const size = dataSize(
      special ? measurable(call.args) : call.args,
      limits.maxRequestBytes,
      "args",
      "bridge/limit-request-bytes",
      "maxRequestBytes",
    );
    if (this.bytes + size > limits.maxTotalBytes) {
      throw new BridgeError(
        "bridge/limit-total-bytes",
        `The run's calls would exceed ${limits.maxTotalBytes} bytes in all (maxTotalBytes); ${labelOf(call.handle, call.method)} did not run.`,
      );
    }
    return size;
  }

  /** Counts an admitted call and its request's bytes. */
  admit(size: number): void {
    this.calls++;
    this.bytes += size;
  }

  /**
   * Counts a response's bytes toward `maxTotalBytes`.
   * @throws BridgeError `bridge/limit-total-bytes` (nothing is counted then).
   */
  chargeResponse(size: number, label: () => string): void {
    if (this.bytes + size > this.limits.maxTotalBytes) {
      throw new BridgeError(
        "bridge/limit-total-bytes",
        `The result of ${label()} would take the run over ${this.limits.maxTotalBytes} bytes in all (maxTotalBytes).`,
      );
    }
    this.bytes += size;
  }
}
