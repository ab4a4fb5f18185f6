import {
  DurableKitError,
  type ErrorCodeOf,
  errorGuard,
  schemaTooNewMessage,
} from "@durablekit/compose";

/**
 * Every error this package throws is an {@link SseError} with a stable string `code`. Codes are part
 * of the public contract; messages are for people and may change.
 *
 * - `sse/invalid-argument`: an argument or option is malformed (a negative heartbeat, a base path
 *   without a leading `/`, a handler without `streams`, …); nothing was done.
 * - `sse/schema-too-new`: the `dk_sse_*` tables were written by a newer version of this package.
 */
export type SseErrorCode = ErrorCodeOf<"sse", "invalid-argument" | "schema-too-new">;

/**
 * Base class of every error thrown by `@durablekit/sse` (a `DurableKitError` of
 * `@durablekit/compose`).
 *
 * `retryable` is derived from the code: no code of this package is retryable (an invalid argument
 * needs a different call, a too-new schema a newer package). Protocol failures are not thrown: the
 * handler answers them with HTTP statuses (a fork whose source cannot be reached gets a 503 and is
 * safe to retry). `code` is an own enumerable property, so it survives Workers RPC.
 */
export class SseError extends DurableKitError<SseErrorCode> {
  override readonly name: string = "SseError";
}

/** True when `error` is an {@link SseError}, optionally with the given code. */
export const isSseError = errorGuard(SseError);

/** An option or argument is malformed (a negative heartbeat, a base path without a leading `/`, …). */
export class SseArgumentError extends SseError {
  override readonly name: string = "SseArgumentError";
  constructor(message: string) {
    super("sse/invalid-argument", message);
  }
}

/** The object's `dk_sse_*` tables were written by a newer version of this package. */
export class SseSchemaError extends SseError {
  override readonly name: string = "SseSchemaError";
  constructor(found: number, supported: number) {
    super("sse/schema-too-new", schemaTooNewMessage("sse", found, supported, "@durablekit/sse"));
  }
}
