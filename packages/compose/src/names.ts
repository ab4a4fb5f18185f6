/** Matches a UTF-16 surrogate that is not part of a pair. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * True when `value` is a usable name (a run id, stream id, idempotency key, …): a non-empty string of
 * at most `maxLength` UTF-16 code units with no lone surrogate. A lone surrogate has no UTF-8 form,
 * so it cannot be stored, compared or sent over HTTP faithfully; every package refuses such names at
 * the door.
 */
export function isWellFormedName(value: unknown, maxLength: number): value is string {
  return (
    typeof value === "string" &&
    value.length > 0 &&
    value.length <= maxLength &&
    !LONE_SURROGATE.test(value)
  );
}
