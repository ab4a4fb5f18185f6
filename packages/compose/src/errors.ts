/**
 * What every package's error constructor takes besides its code and message. A package whose errors
 * carry more (a stream id, a path) extends it.
 */
export interface DurableKitErrorOptions {
  /** The underlying failure, kept as the standard `cause`. */
  cause?: unknown;
}

/**
 * The error convention every durablekit package follows: one base class per package extending
 * {@link DurableKitError}, a stable `code` from a documented union (`"<package>/<word>"`), `retryable`
 * derived from the code (the class's {@link DurableKitError.retryableCodes}), the standard `cause`
 * kept, a message that says what to do, and a guard made by {@link errorGuard}:
 *
 * ```ts
 * export class ShopError extends DurableKitError<ShopErrorCode> {
 *   static override readonly retryableCodes: readonly ShopErrorCode[] = ["shop/storage"];
 *   override readonly name: string = "ShopError";
 * }
 * export const isShopError = errorGuard(ShopError);
 * ```
 *
 * The same idea has the same word in every package (see {@link CommonErrorWord}), so a host can
 * classify an error from any package by the part after the slash.
 */
export abstract class DurableKitError<Code extends string = string> extends Error {
  /**
   * The codes of this class (and its subclasses) that are retryable; none unless the package's base
   * class lists them. `retryable` is read from it when an error is made.
   */
  static readonly retryableCodes: readonly string[] = [];
  /** Stable machine-readable code, `"<package>/<word>"`. Own enumerable, so it survives Workers RPC. */
  readonly code: Code;
  /** Whether repeating the same operation unchanged may succeed. Derived from `code`. */
  readonly retryable: boolean;

  /**
   * @param code - the stable code.
   * @param message - what went wrong and what to do about it.
   * @param options - `cause`, kept as the standard `cause`.
   */
  constructor(code: Code, message: string, options?: DurableKitErrorOptions) {
    const cause = options?.cause;
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.retryable = listed(new.target.retryableCodes, code);
  }
}

/** True when `codes` holds `code` (a plain loop: this runs inside isolates whose built-ins may be replaced). */
function listed(codes: readonly string[], code: string): boolean {
  for (let i = 0; i < codes.length; i++) if (codes[i] === code) return true;
  return false;
}

/**
 * Words that mean the same thing in every package's codes (`tasks/invalid-argument`,
 * `streams/invalid-argument`, …). A package uses these words for these ideas and adds its own
 * words only for ideas of its own.
 *
 * - `invalid-argument`: an argument or option is malformed or out of range; nothing was done.
 * - `unserializable`: a value has no form in the package's encoding.
 * - `too-large`: a value or request is over a `max…Bytes` limit.
 * - `too-deep`: a value nests deeper than the codec allows.
 * - `not-found`: the named thing does not exist.
 * - `conflict`: the name exists with another configuration or owner.
 * - `closed`: the thing is settled and accepts no more writes.
 * - `diverged`: a replay met something other than what the journal recorded.
 * - `schema-too-new`: the tables were written by a newer version of the package.
 * - `storage`: the storage layer failed (retryable).
 */
export type CommonErrorWord =
  | "invalid-argument"
  | "unserializable"
  | "too-large"
  | "too-deep"
  | "not-found"
  | "conflict"
  | "closed"
  | "diverged"
  | "schema-too-new"
  | "storage";

/**
 * An own word of a package is one that restates no shared word: not a {@link CommonErrorWord}, not
 * one with a shared word at its start or end (`module-not-found`, `replay-diverged`), and not a
 * byte limit of its own (`limit-result-bytes`: a value over a `max…Bytes` limit is `too-large`).
 * Resolves to `never` for a word that restates one.
 */
export type OwnErrorWord<Word> = Word extends string
  ? Word extends
      | CommonErrorWord
      | `${string}-${CommonErrorWord}`
      | `${CommonErrorWord}-${string}`
      | `${string}-bytes`
    ? never
    : Word
  : never;

/**
 * A package's error code union, typed from the shared words so drift is a compile error:
 * `ErrorCodeOf<"tasks", "invalid-argument" | "not-found", "step-timeout">` is
 * `"tasks/invalid-argument" | "tasks/not-found" | "tasks/step-timeout"`. `Shared` must be shared
 * words; an `Own` word that restates one (see {@link OwnErrorWord}) makes the union an object
 * type that no code string, and no `DurableKitError` subclass, accepts.
 *
 * @typeParam Package - the package's code prefix (`tasks`, `streams`, `bridge`, …).
 * @typeParam Shared - the {@link CommonErrorWord}s the package uses.
 * @typeParam Own - the package's own words, for ideas no shared word names.
 */
export type ErrorCodeOf<
  Package extends string,
  Shared extends CommonErrorWord,
  Own extends string = never,
> = [Own] extends [OwnErrorWord<Own>]
  ? `${Package}/${Shared | Own}`
  : { readonly "own words that restate a shared word": Exclude<Own, OwnErrorWord<Own>> };

/**
 * Makes a package's guard, `isXError(value, code?)`: true when `value` is an instance of `base` (the
 * package's error base class), optionally with the given code.
 *
 * @param base - the package's error base class.
 */
export function errorGuard<E extends DurableKitError>(
  base: abstract new (...args: never[]) => E,
): (value: unknown, code?: E["code"]) => value is E {
  return (value: unknown, code?: E["code"]): value is E =>
    value instanceof base && (code === undefined || value.code === code);
}

/**
 * True when `value` is any durablekit error (of any package), optionally with the given code. Use it
 * where errors of several packages meet, e.g. an HTTP layer mapping codes to statuses.
 */
export const isDurableKitError: (value: unknown, code?: string) => value is DurableKitError =
  errorGuard<DurableKitError>(DurableKitError);

/**
 * Codes of the errors `@durablekit/compose` itself throws.
 *
 * - `compose/invalid-argument`: an option or argument is malformed (a part without `alarm`, a wake time that is not a number).
 * - `compose/schema-too-new`: a package's tables were written by a newer version; thrown by {@link migrateSchema} when the package gives no error of its own.
 * - `compose/conflict`: a second `Alarms` for an object that has one (compose every part in one).
 * - `compose/part-timeout`: a part's `alarm()` did not settle within `partTimeoutMs`; reported in
 *   `alarm:part-failed`, never thrown to the host.
 * - `compose/not-delegated`: the object's alarm fired (or was due) and never reached its `Alarms`
 *   while a part's wake was overdue: the object's `alarm()` does not call `this.alarms.alarm()`.
 *   Reported in `alarm:not-delegated` and with `console.warn`, never thrown.
 */
export type ComposeErrorCode = ErrorCodeOf<
  "compose",
  "invalid-argument" | "schema-too-new" | "conflict",
  "part-timeout" | "not-delegated"
>;

/** Base class of every error `@durablekit/compose` throws. Only `compose/part-timeout` is retryable. */
export class ComposeError extends DurableKitError<ComposeErrorCode> {
  static override readonly retryableCodes: readonly ComposeErrorCode[] = ["compose/part-timeout"];
  override readonly name: string = "ComposeError";
}

/** True when `value` is a {@link ComposeError}, optionally with the given code. */
export const isComposeError = errorGuard(ComposeError);
