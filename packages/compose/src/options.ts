import type { DurableKitError } from "./errors";

/**
 * Makes a package's `…/invalid-argument` error from a message. Each package passes its own, so
 * the checks below throw that package's error class and code.
 */
export type ArgumentErrorFactory = (message: string) => DurableKitError;

/** Bounds of a numeric option. */
export interface OptionRange {
  /** The smallest value allowed (inclusive). Default 0 for durations, 1 for counts. */
  min?: number;
  /** The largest value allowed (inclusive). Default `Number.MAX_SAFE_INTEGER`. */
  max?: number;
}

/**
 * The checks every package runs at its door, bound to the package's error. Each returns the value
 * to use (the option, or its default when absent) and throws the package's `…/invalid-argument`
 * naming the option and what it got. One implementation, so the same bad input is refused the
 * same way by every package.
 */
export interface OptionChecks {
  /**
   * The Durable Object's state of a SQLite-backed object (`this.ctx`), or a throw that shows the
   * call as it should be written.
   * @param usage - the call as written, e.g. `new Streams(ctx)`.
   */
  ctx(ctx: unknown, usage: string): DurableObjectState;
  /**
   * An options bag: an object, or absent (`undefined` answers `{}`).
   * @param what - names the argument, e.g. `Streams options`.
   */
  options<T extends object>(value: T | undefined, what: string): T;
  /** An optional callback (`now`, `onEvent`): a function, or absent. */
  callback<F extends (...args: never[]) => unknown>(
    value: F | undefined,
    name: string,
  ): F | undefined;
  /** A `…Ms` duration: a finite number of milliseconds within `range` (min 0), floored. */
  ms(value: unknown, name: string, fallback: number, range?: OptionRange): number;
  /** A `max…` count: an integer within `range` (min 1). */
  count(value: unknown, name: string, fallback: number, range?: OptionRange): number;
  /** A boolean option. */
  flag(value: unknown, name: string, fallback: boolean): boolean;
  /** One of a fixed set of words. */
  oneOf<W extends string>(value: unknown, name: string, words: readonly W[], fallback: W): W;
}

/** A short, safe rendering of a bad value for an error message. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  }
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  return String(value);
}

/**
 * The option checks of one package, bound to its argument error.
 *
 * ```ts
 * const check = createOptionChecks((message) => new StreamsArgumentError(message));
 * check.ctx(ctx, "new Streams(ctx)");
 * const maxChunkBytes = check.count(options.maxChunkBytes, "maxChunkBytes", 65_536);
 * ```
 */
export function createOptionChecks(fail: ArgumentErrorFactory): OptionChecks {
  const range = (value: number, name: string, min: number, max: number, what: string): void => {
    if (value < min || value > max) {
      const upper = max === Number.MAX_SAFE_INTEGER ? "" : ` and at most ${max}`;
      throw fail(`${name} must be ${what} of at least ${min}${upper}; got ${value}.`);
    }
  };
  return {
    ctx(ctx, usage) {
      const sql = (ctx as { storage?: { sql?: { exec?: unknown } } } | null | undefined)?.storage
        ?.sql;
      if (typeof ctx !== "object" || ctx === null || typeof sql?.exec !== "function") {
        throw fail(
          `${usage} takes the Durable Object's state (this.ctx) of a SQLite-backed object; got ${describeValue(ctx)}.`,
        );
      }
      try {
        // A key-value-backed object has a `sql` whose every use throws: read its size to know.
        void (sql as { databaseSize?: unknown }).databaseSize;
      } catch (error) {
        throw fail(
          `${usage} needs a SQLite-backed Durable Object, and this one's class stores key-value data only (${error instanceof Error ? error.message : String(error)}). Declare the class under "new_sqlite_classes" (not "new_classes") in a migration of wrangler.jsonc; a class already deployed with key-value storage cannot be converted, so give the parts a new class.`,
        );
      }
      return ctx as DurableObjectState;
    },
    options(value, what) {
      if (value === undefined) return {} as never;
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw fail(`${what} must be an options object; got ${describeValue(value)}.`);
      }
      return value;
    },
    callback(value, name) {
      if (value !== undefined && typeof value !== "function") {
        throw fail(`${name} must be a function; got ${describeValue(value)}.`);
      }
      return value;
    },
    ms(value, name, fallback, bounds) {
      if (value === undefined) return fallback;
      if (typeof value !== "number" || !Number.isFinite(value)) {
        throw fail(`${name} must be a number of milliseconds; got ${describeValue(value)}.`);
      }
      const ms = Math.floor(value);
      range(ms, name, bounds?.min ?? 0, bounds?.max ?? Number.MAX_SAFE_INTEGER, "a duration");
      return ms;
    },
    count(value, name, fallback, bounds) {
      if (value === undefined) return fallback;
      if (typeof value !== "number" || !Number.isSafeInteger(value)) {
        throw fail(`${name} must be an integer; got ${describeValue(value)}.`);
      }
      range(value, name, bounds?.min ?? 1, bounds?.max ?? Number.MAX_SAFE_INTEGER, "an integer");
      return value;
    },
    flag(value, name, fallback) {
      if (value === undefined) return fallback;
      if (typeof value !== "boolean") {
        throw fail(`${name} must be true or false; got ${describeValue(value)}.`);
      }
      return value;
    },
    oneOf(value, name, words, fallback) {
      if (value === undefined) return fallback;
      for (const word of words) if (value === word) return word;
      throw fail(
        `${name} must be ${words.map((word) => JSON.stringify(word)).join(" or ")}; got ${describeValue(value)}.`,
      );
    },
  };
}
