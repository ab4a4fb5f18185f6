/**
 * The registered symbol that marks a {@link TaskTruncatedValue}. No decoded value has a symbol key,
 * so it tells a truncated value from any value a run stored, also to a reader that does not import
 * this package: `value[Symbol.for("@durablekit/tasks/truncated")] === true`.
 */
export const TRUNCATED: unique symbol = Symbol.for("@durablekit/tasks/truncated");

/** Characters of a truncated value's JSON kept as its {@link TaskTruncatedValue.preview}. */
export const TRUNCATED_PREVIEW_CHARS = 256;

/**
 * What a bounded read (`history(runId, { maxValueBytes })`) answers in place of a value whose stored
 * text is larger than the bound: its size and the start of its text, read by SQL without reading or
 * decoding the rest. The whole value is what the same read without the bound answers.
 */
export interface TaskTruncatedValue {
  readonly [TRUNCATED]: true;
  /**
   * UTF-8 bytes of the value as stored: its codec text, which is the value's JSON in a 9-byte
   * envelope (`{"json":…}`), with type annotations after it for Dates, Maps, BigInts and the like.
   */
  readonly bytes: number;
  /**
   * The first {@link TRUNCATED_PREVIEW_CHARS} characters of the value's JSON (the codec's `json`
   * part, as superjson names it).
   */
  readonly preview: string;
}

/** True when `value` is a {@link TaskTruncatedValue} (a bounded read's stand-in for a large value). */
export function isTruncatedValue(value: unknown): value is TaskTruncatedValue {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Partial<TaskTruncatedValue>)[TRUNCATED] === true
  );
}

/** A truncated value's stand-in, from the size and prefix SQL returned. */
export function truncatedValue(bytes: number, preview: string): TaskTruncatedValue {
  return Object.freeze({ [TRUNCATED]: true as const, bytes, preview });
}

/** The envelope every codec text starts with; the value's JSON follows it. */
const CODEC_PREFIX = '{"json":';

/**
 * SQL of a bounded value column: the column itself when its text is at most the bound (bound `?2`),
 * else NULL, followed by its size and preview when it is over (NULL otherwise). `octet_length` reads
 * the size from the record header, so an over-bound value is never returned: SQL returns its size
 * and the first characters of its JSON. `when` narrows which rows' values may be truncated (the
 * others come back whole); `alsoOver` truncates a value for another reason too (a total spent).
 */
export function boundedColumn(column: string, when = "1", alsoOver?: string): string {
  const size = `octet_length(${column}) > ?2`;
  const over = `(${when}) AND ${alsoOver === undefined ? size : `(${size} OR ${alsoOver})`}`;
  const from = `CASE WHEN substr(${column}, 1, ${CODEC_PREFIX.length}) = '${CODEC_PREFIX}' THEN ${CODEC_PREFIX.length + 1} ELSE 1 END`;
  return `CASE WHEN ${over} THEN NULL ELSE ${column} END AS ${column},
    CASE WHEN ${over} THEN octet_length(${column}) END AS ${column}_bytes,
    CASE WHEN ${over} THEN substr(${column}, ${from}, ${TRUNCATED_PREVIEW_CHARS}) END AS ${column}_preview`;
}

/** The stand-in a bounded column's size and preview name, or null when the value came back whole. */
export function truncatedOf(
  bytes: SqlStorageValue | undefined,
  preview: SqlStorageValue | undefined,
): TaskTruncatedValue | null {
  return typeof bytes === "number" ? truncatedValue(bytes, String(preview ?? "")) : null;
}
