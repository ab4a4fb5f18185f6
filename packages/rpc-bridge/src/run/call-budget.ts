import { BridgeError } from "../errors";
import type { BridgeLimits } from "../limits";
import { dataSize, measurable } from "../values/data-size";
import { type CallState, labelOf } from "./call-state";

/**
 * What one attempt's calls may still use under its limits, and what they used: calls made, calls
 * in flight, bytes of requests and responses. A call is checked before it runs and counted only
 * once it is admitted; a response is checked and counted once it is shaped.
 */
export class CallBudget {
  readonly limits: BridgeLimits;
  /** Calls admitted so far. */
  calls = 0;
  /** Bytes of requests and responses so far. */
  bytes = 0;
  /** Calls admitted and not yet answered, in start (hence deadline) order. */
  readonly inflight = new Set<CallState>();

  constructor(limits: BridgeLimits) {
    this.limits = limits;
  }

  /**
   * Checks `maxCalls`, `maxConcurrentCalls`, the request's bytes and `maxTotalBytes` for a
   * resolved call (its arguments as they came from the isolate; `special` when they hold handle
   * or signal records, callbacks or streams); answers the request's size. Streams, callbacks and
   * signals are not counted.
   * @throws BridgeError `bridge/limit-calls`, `bridge/limit-concurrency`,
   * `bridge/too-large` (`limit` `maxRequestBytes` or `maxTotalBytes`), `bridge/unserializable`.
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
      "maxRequestBytes",
    );
    if (this.bytes + size > limits.maxTotalBytes) {
      throw new BridgeError(
        "bridge/too-large",
        `The run's calls would exceed ${limits.maxTotalBytes} bytes in all (maxTotalBytes); ${labelOf(call.handle, call.method)} did not run.`,
        { limit: "maxTotalBytes" },
      );
    }
    return size;
  }

  /**
   * Counts a call host code makes to a program callback toward `maxCalls`.
   * @throws BridgeError `bridge/limit-calls` (nothing is counted then).
   */
  countCallback(label: () => string): void {
    if (this.calls >= this.limits.maxCalls) {
      throw new BridgeError(
        "bridge/limit-calls",
        `The run already made ${this.limits.maxCalls} calls (maxCalls); ${label()} was not called.`,
      );
    }
    this.calls++;
  }

  /**
   * Checks, before a replay run's call gets a key, that its event window (`bytes` of journal text)
   * fits `maxRequestBytes` and what is left of `maxTotalBytes`, and that fewer than `maxCalls`
   * calls of the run were refused after getting a key (`refused`, replayed ones included): past
   * either, the call is refused without a key, so nothing of it is journaled.
   * @throws BridgeError `bridge/too-large` (`limit` `maxRequestBytes` or `maxTotalBytes`),
   *   `bridge/limit-calls`.
   */
  checkWindow(bytes: number, refused: number): void {
    const limits = this.limits;
    if (refused >= limits.maxCalls) {
      throw new BridgeError(
        "bridge/limit-calls",
        `The run already had ${limits.maxCalls} calls refused (maxCalls); it takes no more calls.`,
      );
    }
    if (bytes > limits.maxRequestBytes) {
      throw new BridgeError(
        "bridge/too-large",
        `The call's event window takes ${bytes} bytes, more than ${limits.maxRequestBytes} (maxRequestBytes); the call was not sent on.`,
        { limit: "maxRequestBytes" },
      );
    }
    if (this.bytes + bytes > limits.maxTotalBytes) {
      throw new BridgeError(
        "bridge/too-large",
        `The call's event window would take the run over ${limits.maxTotalBytes} bytes in all (maxTotalBytes).`,
        { limit: "maxTotalBytes" },
      );
    }
  }

  /** Counts a keyed call's event window (checked by {@link checkWindow}). */
  chargeWindow(bytes: number): void {
    this.bytes += bytes;
  }

  /** Counts an admitted call and its request's bytes. */
  admit(size: number): void {
    this.calls++;
    this.bytes += size;
  }

  /** Counts the bytes of an error answer (already bounded to what was left) toward `maxTotalBytes`. */
  chargeError(bytes: number): void {
    this.bytes += bytes;
  }

  /**
   * Counts a response's bytes toward `maxTotalBytes`.
   * @throws BridgeError `bridge/too-large` with `limit` `maxTotalBytes` (nothing is counted then).
   */
  chargeResponse(size: number, label: () => string): void {
    if (this.bytes + size > this.limits.maxTotalBytes) {
      throw new BridgeError(
        "bridge/too-large",
        `The result of ${label()} would take the run over ${this.limits.maxTotalBytes} bytes in all (maxTotalBytes).`,
        { limit: "maxTotalBytes" },
      );
    }
    this.bytes += size;
  }
}
