import {
  DurableKitError,
  type DurableKitErrorOptions,
  type ErrorCodeOf,
  errorGuard,
} from "@durablekit/compose";

/**
 * Stable codes of every error this package throws. A code never changes meaning; new failure
 * kinds get new codes.
 *
 * - `journal/unserializable`: a value the codec cannot carry (function, symbol, cycle, class instance).
 * - `journal/too-large`: an encoding over `maxValueBytes`.
 * - `journal/too-deep`: nesting deeper than `maxDepth`.
 * - `journal/corrupt`: text that is not a valid encoding, or a journal row that cannot be read.
 * - `journal/no-reviver`: a handle record met without a way to revive it (no `revive`, unknown module or kind).
 * - `journal/unsafe-to-repeat`: a replay reached a value or call marked {@link unsafeToRepeat}.
 * - `journal/diverged`: a replayed call differs from the recorded one at the same key.
 * - `journal/conflict`: a call key recorded twice for one execution, or asked twice of a replayer.
 * - `journal/invalid-argument`: an argument or option that is not well formed (a call key, ordinal,
 *   execution id, outcome, handle kind, a store option); nothing was written.
 * - `journal/schema-too-new`: the tables were written by a newer version of this package.
 * - `journal/storage`: the storage layer failed; retrying the operation may succeed.
 */
export type JournalErrorCode = ErrorCodeOf<
  "journal",
  | "unserializable"
  | "too-large"
  | "too-deep"
  | "diverged"
  | "conflict"
  | "invalid-argument"
  | "schema-too-new"
  | "storage",
  "corrupt" | "no-reviver" | "unsafe-to-repeat"
>;

/**
 * Base class of every error this package throws (a `DurableKitError`, see docs/composing.md).
 * `code` is stable; `retryable` says whether the same operation may succeed if repeated (only
 * storage failures are); every other code is terminal: repeating the operation with the same
 * input fails the same way.
 */
export class JournalError extends DurableKitError<JournalErrorCode> {
  static override readonly retryableCodes: readonly JournalErrorCode[] = ["journal/storage"];
  override readonly name: string = "JournalError";
}

/**
 * True when `value` is a {@link JournalError} (including {@link CodecError} and
 * {@link DivergenceError}), optionally with the given code.
 */
export const isJournalError = errorGuard(JournalError);

/**
 * A value the codec refused to encode or a text it could not decode. `path` names the offending
 * value from the root label, e.g. `args[0].when` (or the root label alone for the whole value).
 */
export class CodecError extends JournalError {
  override readonly name: string = "CodecError";

  /**
   * @param code - the error's code.
   * @param path - where the offending value sits, e.g. `args[0].when`.
   * @param message - what went wrong and what to do.
   * @param options - `cause`.
   */
  constructor(
    code: JournalErrorCode,
    readonly path: string,
    message: string,
    options?: DurableKitErrorOptions,
  ) {
    super(code, message, options);
  }
}

/** A replayed call that does not match the recorded call at the same key. */
export class DivergenceError extends JournalError {
  override readonly name: string = "DivergenceError";

  /**
   * @param key - the call key where the replay diverged, e.g. `"3.2"`.
   * @param expected - the recorded call, as `module.method(argsDigest)`.
   * @param actual - the call the replay made, in the same form.
   */
  constructor(
    readonly key: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(
      "journal/diverged",
      `Replay diverged at call ${key}: the journal recorded ${expected} but the run now made ${actual}. ` +
        "The program or its inputs changed since the run was recorded; start a new execution instead of replaying this one.",
    );
  }
}
