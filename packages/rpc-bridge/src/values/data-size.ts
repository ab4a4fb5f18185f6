import { CodecError, encode, encodedSize, handle } from "@durablekit/handle-journal";
import { type BridgeByteLimit, BridgeError } from "../errors";
import { isPlainObject, MAX_DEPTH, setOwn, tagOf } from "../shared/wire";

/**
 * What values weigh against the byte limits: the size of the handle-journal codec's encoding
 * (JSON; bytes count as base64), as a journal would store them. Plain JSON, the common case, is
 * sized in one walk without building any text; anything else goes through the codec, which also
 * reports what it cannot carry.
 */

export { MAX_DEPTH };

/**
 * The part of a value the byte limits count: streams, callbacks and signals become null (they are
 * not data); handle records stay as the small records they are.
 */
export function measurable(value: unknown, depth = 0): unknown {
  if (typeof value === "function") return null;
  if (typeof value !== "object" || value === null || depth > MAX_DEPTH) return value;
  if (value instanceof ReadableStream) return null;
  if (Array.isArray(value)) return value.map((item) => measurable(item, depth + 1));
  if (!isPlainObject(value)) return value;
  if (tagOf(value) === "s") return null;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    setOwn(out, key, measurable((value as Record<string, unknown>)[key], depth + 1));
  }
  return out;
}

/** Containers nested deeper than this take the codec's own size walk (which also finds cycles). */
const PLAIN_DEPTH = 16;

/** The codec's envelope around plain JSON: `{"json":` … `}`. */
const ENVELOPE_BYTES = 9;

/**
 * UTF-8 bytes of `text` as a JSON string literal, quotes included: what `JSON.stringify` writes
 * (short escapes for \b \t \n \f \r " \\, `\u00XX` for other controls and `\uXXXX` for lone
 * surrogates), counted in one pass without building it.
 */
function jsonStringBytes(text: string): number {
  let bytes = 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20) bytes += c === 0x22 || c === 0x5c ? 2 : 1;
      else bytes += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    } else if (c < 0x800) {
      bytes += 2;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 6;
    } else {
      bytes += c >= 0xdc00 && c <= 0xdfff ? 6 : 3;
    }
  }
  return bytes;
}

/**
 * UTF-8 bytes of `value`'s JSON text when it is plain JSON: strings, finite numbers other than -0,
 * booleans, null, and plain arrays and objects of them. The codec writes exactly such a value as
 * `{"json":<JSON text>}`; for anything else (and strings longer than `max`, which the codec
 * refuses at once) this answers -1 and the codec measures it.
 */
function plainJsonBytes(value: unknown, depth: number, max: number): number {
  switch (typeof value) {
    case "string":
      return value.length > max ? -1 : jsonStringBytes(value);
    case "number":
      return Number.isFinite(value) && (value !== 0 || 1 / value > 0) ? String(value).length : -1;
    case "boolean":
      return value ? 4 : 5;
    case "object":
      break;
    default:
      return -1;
  }
  if (value === null) return 4;
  if (depth >= PLAIN_DEPTH) return -1;
  const proto = Object.getPrototypeOf(value);
  let bytes = 2;
  if (proto === Array.prototype) {
    const items = value as unknown[];
    for (let i = 0; i < items.length; i++) {
      const item = plainJsonBytes(items[i], depth + 1, max);
      if (item < 0) return -1;
      bytes += i === 0 ? item : item + 1;
    }
    return bytes;
  }
  if (proto !== Object.prototype && proto !== null) return -1;
  // The codec writes an object with [handle.serialize] as a handle record, not as its fields.
  if ((value as { [handle.serialize]?: unknown })[handle.serialize] !== undefined) return -1;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const item = plainJsonBytes((value as Record<string, unknown>)[key], depth + 1, max);
    if (item < 0) return -1;
    bytes += jsonStringBytes(key) + 1 + (i === 0 ? item : item + 1);
  }
  return bytes;
}

function codecFailure(
  error: unknown,
  maxBytes: number,
  path: string,
  limit: BridgeByteLimit,
): unknown {
  if (!(error instanceof CodecError)) return error;
  if (error.code === "journal/too-large") {
    return new BridgeError(
      "bridge/too-large",
      `The ${path} encode to more than ${maxBytes} bytes (${limit}); send less data per call, or a ReadableStream for bulk bytes.`,
      { cause: error, path: error.path, limit },
    );
  }
  return new BridgeError(
    "bridge/unserializable",
    `${error.message} Only data (JSON, Date, Map, Set, BigInt, RegExp, URL, bytes), objects, functions and ReadableStreams cross the bridge.`,
    { cause: error, path: error.path },
  );
}

/**
 * The encoded size of `value` in bytes (the handle-journal codec's), refused above `maxBytes`.
 * Plain JSON is sized from its JSON text in one walk; everything else, and anything over the
 * limit, goes through the codec, which reports the refusal.
 * @throws BridgeError `bridge/too-large` (its `limit` is `limit`) when larger; `bridge/unserializable` (with `path`) when the codec
 * cannot carry a part of it.
 */
export function dataSize(
  value: unknown,
  maxBytes: number,
  path: string,
  limit: BridgeByteLimit,
): number {
  const plain = plainJsonBytes(value, 0, maxBytes);
  if (plain >= 0 && plain + ENVELOPE_BYTES <= maxBytes) return plain + ENVELOPE_BYTES;
  try {
    return encodedSize(value, { maxValueBytes: maxBytes, path });
  } catch (error) {
    throw codecFailure(error, maxBytes, path, limit);
  }
}

/**
 * The codec text of `value`, refused above `maxBytes` (same errors as {@link dataSize}).
 */
export function encodeChecked(
  value: unknown,
  maxBytes: number,
  path: string,
  limit: BridgeByteLimit,
): string {
  try {
    return encode(value, { maxValueBytes: maxBytes, path });
  } catch (error) {
    throw codecFailure(error, maxBytes, path, limit);
  }
}
