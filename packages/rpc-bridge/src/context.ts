/** What a run may do: `"read"` runs only functions and methods marked read-only. */
export type BridgeAccess = "read" | "read-write";

/**
 * What happens to a run that is interrupted (its object restarted, or `ctx.interrupt()`):
 * `"fail"` fails it, `"restart"` runs it again from the top, `"replay"` journals every call and
 * runs it again from the top answering the journaled calls from the journal, so no recorded call
 * runs twice (and `ctx.interrupt()` releases it until `resume`).
 */
export type BridgeInterruptPolicy = "fail" | "restart" | "replay";

/**
 * The context of one bridge call, given to the exported function or handle method it runs. Every
 * call gets its own, including each method call on an object an earlier call returned: the signal
 * and deadline are this call's, not those of the call that made the object.
 */
export interface BridgeCallContext {
  /**
   * `"<executionId>:<callKey>"`: unique in the execution and the same for the same call of a
   * restarted attempt's same position, so usable as an idempotency key toward other systems.
   */
  readonly callId: string;
  /** The execution this call belongs to. */
  readonly executionId: string;
  /** The call key: `"3"` for the third top-level call, `"3.2"` for the second method call on an object call 3 made. */
  readonly key: string;
  /** Aborts at this call's deadline and when the run ends (its reason is a coded `BridgeError`). */
  readonly signal: AbortSignal;
  /** Epoch milliseconds after which the call is cut off: its start plus `callTimeoutMs`, capped by the run's deadline. */
  readonly deadline: number;
  /** The run's access. A call that reaches host code already passed the access check. */
  readonly access: BridgeAccess;
  /** The run's attempt, 1 for the first; a `"restart"` run counts up. */
  readonly attempt: number;
  /**
   * Interrupts the run. In a `"replay"` run it releases the run until someone calls
   * `executor.resume(executionId, value)`: the interrupt is journaled at this call's key with
   * `payload` (data), new calls from the program are held, calls in flight finish and are
   * journaled, then the attempt ends and `execute` resolves `{ state: "interrupted", interrupt:
   * { key, callId, payload } }`. On resume the run replays from the top and the program gets
   * `value` as this call's answer, **without this host code running again**; so the promise
   * returned here never resolves: it rejects with `bridge/interrupted` when the attempt ends, to
   * unwind the host code. `T` is the value `resume` will give the program.
   *
   * In a `"fail"` run the run fails with `bridge/interrupted`; in a `"restart"` run it starts again
   * from the top; either way the promise rejects with that error, and a string `payload` is the
   * reason the error message gives.
   * @throws BridgeError (as a rejection, replay runs) `bridge/too-large` (`limit` `maxInterruptBytes`) when `payload`
   *   encodes to more than `maxInterruptBytes`, `bridge/unserializable` when it is not data: the
   *   run is not released and goes on.
   */
  interrupt<T = unknown>(payload?: unknown): Promise<T>;
}

/**
 * A host function: an exported function of a host module, a function a call returned, or (with
 * `this` bound to its object) a method of a returned RpcTarget. It receives the program's
 * arguments as one array and the call's context, and may return data, RpcTargets, functions,
 * ReadableStreams, and plain objects and arrays containing them; what it throws reaches the
 * program as the same error (class by name, `code`, `retryable` and other own JSON properties).
 */
// biome-ignore lint/suspicious/noExplicitAny: host functions declare their own argument tuples.
export type BridgeHostFunction = (args: any, ctx: BridgeCallContext) => unknown;
