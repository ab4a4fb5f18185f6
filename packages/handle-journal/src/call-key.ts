import { JournalError } from "./errors";

function checkOrdinal(ordinal: number): void {
  if (!Number.isSafeInteger(ordinal) || ordinal < 1) {
    throw new JournalError(
      "journal/invalid-argument",
      `Call ordinal ${String(ordinal)} is not a positive integer: ordinals count calls from 1.`,
    );
  }
}

/**
 * The key of the `ordinal`-th top-level call of a run (1-based): `topLevelKey(1)` is `"1"`.
 * @throws JournalError `journal/invalid-argument` when `ordinal` is not a positive safe integer.
 */
export function topLevelKey(ordinal: number): string {
  checkOrdinal(ordinal);
  return String(ordinal);
}

/**
 * The key of the `ordinal`-th method call on a handle made by call `parent`:
 * `childKey("3", 2)` is `"3.2"`, recursively (`"3.2.1"`).
 * @throws JournalError `journal/invalid-argument` when `parent` is not a key or `ordinal` not a positive integer.
 */
export function childKey(parent: string, ordinal: number): string {
  parseKey(parent);
  checkOrdinal(ordinal);
  return `${parent}.${ordinal}`;
}

/**
 * The ordinals of a key, outermost first: `parseKey("3.2.1")` is `[3, 2, 1]`.
 * @throws JournalError `journal/invalid-argument` for anything but dot-separated positive integers without
 *   leading zeros.
 */
export function parseKey(key: string): number[] {
  if (typeof key !== "string") {
    throw new JournalError(
      "journal/invalid-argument",
      `A call key must be a string such as "3" or "3.2.1"; got ${typeof key}.`,
    );
  }
  const parts = key.split(".");
  const out: number[] = new Array(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    const n = Number(part);
    if (
      part.length === 0 ||
      part[0] === "0" ||
      !/^[0-9]+$/.test(part) ||
      !Number.isSafeInteger(n)
    ) {
      throw new JournalError(
        "journal/invalid-argument",
        `"${key}" is not a call key: a key is positive integers joined by dots, e.g. "3" or "3.2.1".`,
      );
    }
    out[i] = n;
  }
  return out;
}

/** True when `key` is a well-formed call key. */
export function isCallKey(key: unknown): key is string {
  return typeof key === "string" && /^[1-9][0-9]*(\.[1-9][0-9]*)*$/.test(key);
}

/**
 * The key of the call that made the handle a child call was made on: `parentKey("3.2")` is
 * `"3"`; `undefined` for a top-level key.
 * @throws JournalError `journal/invalid-argument` when `key` is not a string.
 */
export function parentKey(key: string): string | undefined {
  if (typeof key !== "string") parseKey(key);
  const at = key.lastIndexOf(".");
  return at < 0 ? undefined : key.slice(0, at);
}

/**
 * Orders keys by their ordinals, outermost first (`"2" < "3" < "3.1" < "3.2" < "10"`); a
 * comparator for `Array.prototype.sort`.
 */
export function compareKeys(a: string, b: string): number {
  const x = parseKey(a);
  const y = parseKey(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = (x[i] as number) - (y[i] as number);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/**
 * The id host code is given for a call: `"<executionId>:<key>"`. Stable across replays, so it can
 * serve as an idempotency key toward external systems.
 */
export function callIdOf(executionId: string, key: string): string {
  return `${executionId}:${key}`;
}
