/**
 * Every error this package throws is an {@link SseError} with a stable string `code`. Codes are part
 * of the public contract; messages are for people and may change.
 */
export type SseErrorCode = "sse/invalid-argument" | "sse/schema-too-new";

/**
 * Base class of every error thrown by `@durablekit/sse`.
 *
 * `retryable` says whether repeating the same call unchanged may succeed. Every error this package
 * throws is terminal (an invalid argument needs a different call, a too-new schema a newer
 * package); the field exists so hosts can classify errors uniformly across durablekit packages.
 * Protocol failures are not thrown: the handler answers them with HTTP statuses (a fork whose
 * source cannot be reached gets a 503 and is safe to retry). `code` is an own enumerable
 * property, so it survives Workers RPC.
 */
export class SseError extends Error {
  readonly code: SseErrorCode;
  readonly retryable: boolean;

  constructor(
    code: SseErrorCode,
    message: string,
    options: { cause?: unknown; retryable?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SseError";
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** True when `error` is an {@link SseError}, optionally with the given code. */
export function isSseError(error: unknown, code?: SseErrorCode): error is SseError {
  return error instanceof SseError && (code === undefined || error.code === code);
}

/** An option or argument is malformed (a negative heartbeat, a base path without a leading `/`, …). */
export class SseArgumentError extends SseError {
  constructor(message: string) {
    super("sse/invalid-argument", message);
    this.name = "SseArgumentError";
  }
}

/** The object's `dk_sse_*` tables were written by a newer version of this package. */
export class SseSchemaError extends SseError {
  constructor(found: number, supported: number) {
    super(
      "sse/schema-too-new",
      `The dk_sse_* tables are at schema version ${found}, newer than the ${supported} this version of @durablekit/sse understands. Deploy the newer package version.`,
    );
    this.name = "SseSchemaError";
  }
}
