import {
  DurableKitError,
  type DurableKitErrorOptions,
  type ErrorCodeOf,
  errorGuard,
} from "@durablekit/compose";
import { isJournalError, type JournalErrorRecord, toErrorRecord } from "@durablekit/handle-journal";

/**
 * Stable codes of every error this package throws or delivers to program code. A code never
 * changes meaning; new failure kinds get new codes.
 *
 * Refusals of one call (the call did not run):
 * - `bridge/limit-calls`: the run already made `maxCalls` calls.
 * - `bridge/limit-concurrency`: `maxConcurrentCalls` calls are already in flight (retryable).
 * - `bridge/too-large` (`limit` `"maxRequestBytes"`): the call's arguments encode to more than
 *   `maxRequestBytes`; (`limit` `"maxTotalBytes"`): the run's requests and responses together
 *   would exceed `maxTotalBytes`.
 * - `bridge/limit-handles`: the run already holds `maxHandles` objects.
 * - `bridge/access-denied`: the run has `access: "read"` and the function or method is not read-only.
 * - `bridge/unknown-method`: the object or module has no such function or method.
 * - `bridge/handle-disposed`: the object was disposed (or never existed in this run).
 * - `bridge/unserializable`: an argument or result cannot cross the bridge; `path` names it.
 * - `bridge/run-ended`: the run had already ended when the call arrived or while it was in flight.
 * - `bridge/frontier` (`replayRecording` only): the program made a call the recording does not hold;
 *   a replay of a recording runs nothing live, so it stops there.
 * - `bridge/not-replayable` (replay runs): the call passed or returned what a replay cannot
 *   journal (a function, callback or ReadableStream, unless the host function is marked
 *   unsafeToRepeat; an object without `[handle.serialize]` or a kind its module can revive).
 *
 * - `bridge/too-large` with `limit` `"maxInterruptBytes"` (thrown to host code by
 *   `ctx.interrupt(payload)`): the payload encodes to more than `maxInterruptBytes`; the run was
 *   not released and goes on.
 *
 * Failures of one call (the call ran):
 * - `bridge/too-large` with `limit` `"maxResponseBytes"` (or `"maxTotalBytes"`): the result
 *   encodes to more than `maxResponseBytes` (or than what is left of `maxTotalBytes`).
 * - `bridge/call-timeout`: the call passed its deadline (retryable).
 * - `bridge/callback-expired`: host code used a callback after the call it was passed to returned.
 *
 * Refusals of a program or configuration (nothing ran):
 * - `bridge/not-found`: the program imports a module that is not configured (`execute`).
 * - `bridge/module-private`: the program imports a private module.
 * - `bridge/invalid-program`: the source does not parse, has no default export, uses a computed
 *   `import()`, or is larger than `maxSourceBytes`.
 * - `bridge/invalid-module`: a configured module is malformed (bad specifier, export name, import).
 * - `bridge/invalid-argument`: an argument or option is malformed or outside its documented range.
 * - `bridge/too-large` with `limit` `"maxInputBytes"`: the input (or a resume's value) encodes
 *   to more than `maxInputBytes`.
 * - `bridge/conflict`: an execution with that id already exists; `resume` of an execution that is
 *   not interrupted (running, ended, or already resumed); a second `Executor` over the same object
 *   (construct parts once, in the constructor).
 * - `bridge/not-found`: `resume` of an execution id that does not exist.
 * - `bridge/schema-too-new`: the `dk_bridge_*` tables were written by a newer version of this package.
 *
 * Ends of a run (the execution's `error`):
 * - `bridge/run-timeout`: the run passed `runTimeoutMs` (retryable).
 * - `bridge/cancelled`: `cancel()` ended the run.
 * - `bridge/interrupted`: the run was interrupted (`ctx.interrupt()` or a restart) with `onInterrupt: "fail"`.
 * - `bridge/unsafe-to-repeat`: a restart would run again a call marked `unsafeToRepeat`, or a
 *   replay reached such a call whose outcome was not recorded.
 * - `bridge/diverged`: a replay met another call than the journal recorded at a key (module,
 *   method or arguments), the program ended with recorded calls left, or the isolate saw events
 *   in another order than recorded.
 * - `bridge/replay-nondeterministic` (thrown to program code, in the isolate): a replay run asked
 *   for something the isolate cannot repeat identically (Web Crypto key generation, randomized
 *   signing or encryption). Pass keys in as input, or run with `onInterrupt` "fail" or "restart".
 *   Uncaught, it ends the run as the program's error (the code moves to `programCode`).
 * - `bridge/fingerprint-changed`: recovery of a replay run found the program, its source modules,
 *   the compatibility date or flags, the wire or journal format changed since it was recorded.
 * - `bridge/too-many-attempts`: a `"restart"` run was interrupted more than `maxAttempts` times.
 * - `bridge/too-large` with `limit` `"maxResultBytes"`: the program's result encodes to more
 *   than `maxResultBytes`. A result that is not data ends the run `bridge/unserializable`.
 * - `bridge/unhandled-rejection`: the program left a rejected promise nobody handled.
 * - `bridge/isolate-failed`: the isolate itself failed (CPU limit, crash, broken connection, or the
 *   runtime cancelling it as hung: awaiting an event nothing can deliver). Not retryable: the same
 *   program usually fails the same way again.
 * - `bridge/storage` (retryable): a replay run's journal failed to record or load (handle-journal's
 *   `journal/storage`, or anything a custom `JournalPort` throws); `cause` is that failure.
 * - `bridge/journal-corrupt`: a replay run's journal holds what this format never writes
 *   (handle-journal's `journal/corrupt`); `cause` is that error.
 *
 * Errors of handle-journal never reach callers or programs as they are: {@link fromJournalFailure}
 * names each in this catalogue, keeping it as `cause` (see README, "Error codes").
 *
 * A run that fails because the program threw (its own error, or a platform error such as `fetch`'s,
 * `caches`' or `eval`'s it let through) has no bridge code: its error is the program's own, and a
 * `bridge/…` code the program set moves to `programCode`. A `bridge/` code on an execution's error
 * always means the bridge ended the run.
 */
export type BridgeErrorCode = ErrorCodeOf<
  "bridge",
  | "too-large"
  | "unserializable"
  | "invalid-argument"
  | "not-found"
  | "conflict"
  | "diverged"
  | "schema-too-new"
  | "storage",
  | "limit-calls"
  | "limit-concurrency"
  | "limit-handles"
  | "access-denied"
  | "unknown-method"
  | "handle-disposed"
  | "run-ended"
  | "call-timeout"
  | "callback-expired"
  | "module-private"
  | "invalid-program"
  | "invalid-module"
  | "not-replayable"
  | "frontier"
  | "run-timeout"
  | "cancelled"
  | "interrupted"
  | "unsafe-to-repeat"
  | "replay-nondeterministic"
  | "fingerprint-changed"
  | "too-many-attempts"
  | "unhandled-rejection"
  | "isolate-failed"
  | "journal-corrupt"
>;

/**
 * The byte limit a `bridge/too-large` error names in its `limit`: which of {@link BridgeLimits}'
 * (or the executor's) `max…Bytes` options the value was over.
 */
export type BridgeByteLimit =
  | "maxRequestBytes"
  | "maxResponseBytes"
  | "maxTotalBytes"
  | "maxInputBytes"
  | "maxResultBytes"
  | "maxInterruptBytes";

/** Options of a {@link BridgeError}. */
export interface BridgeErrorOptions extends DurableKitErrorOptions {
  /** Where the offending value sits, e.g. `args[0].when`, for `bridge/unserializable` and limits. */
  path?: string;
  /** For `bridge/too-large`: the option the value was over. */
  limit?: BridgeByteLimit;
}

/**
 * Base class of every error this package throws in the host (a `DurableKitError`, see
 * docs/composing.md), and the shape program code catches for bridge refusals (`name`
 * `"BridgeError"`, with `code` and `retryable`). `retryable` says whether the same call or run may
 * succeed if repeated later; every other code is terminal.
 */
export class BridgeError extends DurableKitError<BridgeErrorCode> {
  static override readonly retryableCodes: readonly BridgeErrorCode[] = [
    "bridge/limit-concurrency",
    "bridge/call-timeout",
    "bridge/run-timeout",
    "bridge/storage",
  ];
  override readonly name: string = "BridgeError";
  /** Where the offending value sits, when a value was refused. */
  readonly path?: string;
  /** For `bridge/too-large`: the `max…Bytes` option the value was over. */
  readonly limit?: BridgeByteLimit;

  constructor(code: BridgeErrorCode, message: string, options?: BridgeErrorOptions) {
    super(code, message, options);
    if (options?.path !== undefined) this.path = options.path;
    if (options?.limit !== undefined) this.limit = options.limit;
  }
}

/** True when `value` is a {@link BridgeError}, optionally with the given code. */
export const isBridgeError = errorGuard(BridgeError);

/**
 * The bridge's error for a failure that came from the journal underneath, with that failure as its
 * `cause`. handle-journal's codes map to the bridge's: `journal/no-reviver` →
 * `bridge/not-replayable`, `journal/diverged` → `bridge/diverged`,
 * `journal/unsafe-to-repeat` → `bridge/unsafe-to-repeat`, `journal/conflict` → `bridge/conflict`,
 * `journal/corrupt` → `bridge/journal-corrupt`, `journal/schema-too-new` →
 * `bridge/schema-too-new`; every other code, and anything else a `JournalPort` throws, →
 * `bridge/storage`. A `BridgeError` is answered as it is.
 */
export function fromJournalFailure(error: unknown): BridgeError {
  if (isBridgeError(error)) return error;
  let detail = "";
  try {
    detail = String((error as { message?: unknown } | null)?.message ?? error);
  } catch {
    // A hostile thrown value: no detail.
  }
  const options = { cause: error };
  if (isJournalError(error, "journal/no-reviver")) {
    return new BridgeError(
      "bridge/not-replayable",
      `A journaled object could not be revived: ${detail}`,
      options,
    );
  }
  if (isJournalError(error, "journal/diverged")) {
    return new BridgeError("bridge/diverged", detail, options);
  }
  if (isJournalError(error, "journal/unsafe-to-repeat")) {
    return new BridgeError("bridge/unsafe-to-repeat", detail, options);
  }
  if (isJournalError(error, "journal/conflict")) {
    return new BridgeError(
      "bridge/conflict",
      `The run's journal already holds what this attempt recorded (another attempt wrote it): ${detail}`,
      options,
    );
  }
  if (isJournalError(error, "journal/corrupt")) {
    return new BridgeError(
      "bridge/journal-corrupt",
      `The run's journal cannot be read by this version: ${detail} Start a new execution.`,
      options,
    );
  }
  if (isJournalError(error, "journal/schema-too-new")) {
    return new BridgeError("bridge/schema-too-new", detail, options);
  }
  return new BridgeError(
    "bridge/storage",
    `The run's journal failed, so the run ended without delivering an answer it could not record: ${detail}`,
    options,
  );
}

/** The error record (handle-journal's shape) of a new {@link BridgeError}: how the bridge reports its own failures. */
export function bridgeErrorRecord(code: BridgeErrorCode, message: string): JournalErrorRecord {
  return toErrorRecord(new BridgeError(code, message));
}

/**
 * A promise rejected with `error` whose rejection is already handled: host code that drops the
 * promise (a callback it never awaits, an interrupt it does not await) logs no unhandled rejection.
 */
export function handledRejection(error: unknown): Promise<never> {
  const promise = Promise.reject(error);
  promise.catch(() => {});
  return promise;
}

export { safeErrorRecord } from "./shared/safe-error-record";

/** Characters an over-limit error record keeps of its message (and of its name and code). */
const KEPT_CHARS = 256;

function keptString(value: unknown): string | undefined {
  return typeof value === "string" ? value.slice(0, KEPT_CHARS) : undefined;
}

/** An error record bounded by a byte limit, and the bytes it weighs. */
export interface BoundedErrorRecord {
  record: JournalErrorRecord;
  bytes: number;
}

/**
 * Measures an error record (UTF-8 bytes of its JSON) and, when it weighs more than `maxBytes`,
 * replaces it by one keeping only `name`, `code`, `retryable`, a `bridge/too-large` error's `limit`
 * and the first 256 characters of the message, with `truncated: true` and a note in the message
 * saying how large it was. Never throws.
 */
export function boundErrorRecord(
  record: JournalErrorRecord,
  maxBytes: number,
  limitName: string,
): BoundedErrorRecord {
  let bytes = Number.POSITIVE_INFINITY;
  try {
    bytes = new TextEncoder().encode(JSON.stringify(record)).byteLength;
  } catch {
    // Unmeasurable (not JSON): replaced below.
  }
  if (bytes <= maxBytes) return { record, bytes };
  const body = record.$error as Record<string, unknown>;
  const size = Number.isFinite(bytes) ? `${bytes} bytes` : "an unmeasurable size";
  const small: Record<string, unknown> = {
    name: keptString(body.name) ?? "Error",
    message: `${keptString(body.message) ?? ""}… (error truncated: it took ${size}, over ${limitName} ${maxBytes})`,
  };
  const code = keptString(body.code);
  if (code !== undefined) small.code = code;
  if (typeof body.retryable === "boolean") small.retryable = body.retryable;
  const limit = keptString(body.limit);
  if (limit !== undefined) small.limit = limit;
  small.truncated = true;
  const bounded = { $error: small } as JournalErrorRecord;
  return { record: bounded, bytes: new TextEncoder().encode(JSON.stringify(bounded)).byteLength };
}
