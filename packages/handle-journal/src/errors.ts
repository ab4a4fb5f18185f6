import {
  DurableKitError,
  type DurableKitErrorOptions,
  type ErrorCodeOf,
  isErrorOf,
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

const RETRYABLE: ReadonlySet<JournalErrorCode> = new Set<JournalErrorCode>(["journal/storage"]);

/**
 * Base class of every error this package throws (a `DurableKitError`, see docs/composing.md).
 * `code` is stable; `retryable` says whether the same operation may succeed if repeated (only
 * storage failures are); every other code is terminal: repeating the operation with the same
 * input fails the same way.
 */
export class JournalError extends DurableKitError<JournalErrorCode> {
  constructor(code: JournalErrorCode, message: string, options?: DurableKitErrorOptions) {
    super(code, message, { cause: options?.cause, retryable: RETRYABLE.has(code) });
    this.name = "JournalError";
  }
}

/**
 * True when `value` is a {@link JournalError} (including {@link CodecError} and
 * {@link DivergenceError}), optionally with the given code.
 */
export function isJournalError(value: unknown, code?: JournalErrorCode): value is JournalError {
  return isErrorOf(JournalError, value, code);
}

/**
 * A value the codec refused to encode or a text it could not decode. `path` names the offending
 * value from the root label, e.g. `args[0].when` (or the root label alone for the whole value).
 */
export class CodecError extends JournalError {
  /** Where the offending value sits, e.g. `args[0].when`. */
  readonly path: string;

  constructor(
    code: JournalErrorCode,
    path: string,
    message: string,
    options?: DurableKitErrorOptions,
  ) {
    super(code, message, options);
    this.name = "CodecError";
    this.path = path;
  }
}

/** A replayed call that does not match the recorded call at the same key. */
export class DivergenceError extends JournalError {
  /** The call key where the replay diverged, e.g. `"3.2"`. */
  readonly key: string;
  /** The recorded call, as `module.method(argsDigest)`. */
  readonly expected: string;
  /** The call the replay made, in the same form. */
  readonly actual: string;

  constructor(key: string, expected: string, actual: string) {
    super(
      "journal/diverged",
      `Replay diverged at call ${key}: the journal recorded ${expected} but the run now made ${actual}. ` +
        "The program or its inputs changed since the run was recorded; start a new execution instead of replaying this one.",
    );
    this.name = "DivergenceError";
    this.key = key;
    this.expected = expected;
    this.actual = actual;
  }
}
