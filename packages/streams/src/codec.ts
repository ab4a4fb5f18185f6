import { StreamSerializationError, StreamsArgumentError } from "./errors";
import type { StreamEncoding } from "./types";

/** Default ceiling for one stored chunk (1 MiB). */
export const DEFAULT_MAX_CHUNK_BYTES = 1_048_576;

/** What a chunk body is in SQLite: TEXT for `json`/`text`, BLOB for `binary`. */
export type ChunkBody = string | Uint8Array;

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Lower-cases a content type and drops the spaces around its parameters, for comparisons. */
export function normalizeContentType(contentType: string): string {
  return contentType
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .join(";")
    .toLowerCase();
}

/**
 * The encoding a content type implies: `json` for `application/json` and `*+json`, `text` for
 * `text/*`, `binary` for anything else.
 */
export function encodingFor(contentType: string): StreamEncoding {
  const media = normalizeContentType(contentType).split(";")[0] ?? "";
  if (media === "application/json" || media.endsWith("+json")) return "json";
  if (media.startsWith("text/")) return "text";
  return "binary";
}

/** Checks an `encoding` option. */
export function assertEncoding(encoding: unknown): asserts encoding is StreamEncoding {
  if (encoding !== "json" && encoding !== "text" && encoding !== "binary") {
    throw new StreamsArgumentError(
      `Unknown encoding ${JSON.stringify(encoding)}; use "json", "text" or "binary".`,
    );
  }
}

function tooLarge(streamId: string, bytes: number, limit: number): StreamSerializationError {
  return new StreamSerializationError(
    "streams/too-large",
    `A chunk for stream "${streamId}" is ${bytes} bytes, over the ${limit}-byte limit (maxChunkBytes). Split it into smaller chunks.`,
    streamId,
  );
}

function isBytes(value: unknown): value is ArrayBuffer | ArrayBufferView {
  return value instanceof ArrayBuffer || ArrayBuffer.isView(value);
}

function toBytes(value: ArrayBuffer | ArrayBufferView): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}

/** UTF-8 length of a string, computed only when the cheap bound (3 bytes per UTF-16 unit) is over `limit`. */
function utf8Over(text: string, limit: number): number | null {
  if (text.length * 3 <= limit) return null;
  const bytes = utf8.encode(text).byteLength;
  return bytes > limit ? bytes : null;
}

/**
 * Turns an appended value into the body stored for it, enforcing the size limit.
 * @throws {StreamSerializationError} with a message naming what is wrong and where.
 */
export function encodeChunk(
  encoding: StreamEncoding,
  value: unknown,
  limit: number,
  streamId: string,
): ChunkBody {
  if (encoding === "json") {
    const json = stringifyJson(value, "chunk", streamId);
    const over = utf8Over(json, limit);
    if (over !== null) throw tooLarge(streamId, over, limit);
    return json;
  }
  if (encoding === "text") {
    let text: string;
    if (typeof value === "string") text = value;
    else if (isBytes(value)) {
      try {
        text = strictUtf8.decode(toBytes(value));
      } catch (cause) {
        throw new StreamSerializationError(
          "streams/unserializable",
          `A chunk for text stream "${streamId}" is bytes that are not valid UTF-8; append a string, or open the stream with encoding "binary".`,
          streamId,
          cause,
        );
      }
    } else {
      throw new StreamSerializationError(
        "streams/unserializable",
        `A chunk for text stream "${streamId}" must be a string (or UTF-8 bytes), not ${describe(value)}.`,
        streamId,
      );
    }
    const over = utf8Over(text, limit);
    if (over !== null) throw tooLarge(streamId, over, limit);
    return text;
  }
  let bytes: Uint8Array;
  if (isBytes(value)) bytes = toBytes(value);
  else if (typeof value === "string") bytes = utf8.encode(value);
  else {
    throw new StreamSerializationError(
      "streams/unserializable",
      `A chunk for binary stream "${streamId}" must be a Uint8Array, ArrayBuffer, ArrayBufferView or string, not ${describe(value)}.`,
      streamId,
    );
  }
  if (bytes.byteLength > limit) throw tooLarge(streamId, bytes.byteLength, limit);
  return bytes;
}

/** Turns a stored body back into the chunk value. */
export function decodeChunk(encoding: StreamEncoding, body: unknown): unknown {
  if (encoding === "json") return JSON.parse(body as string);
  if (encoding === "text") return body as string;
  return new Uint8Array(body as ArrayBuffer);
}

/**
 * `JSON.stringify` with errors that say what cannot be stored and where (`chunk.items[2]`).
 * Values JSON drops inside objects (undefined or function properties) are dropped, as JSON does;
 * a value with no JSON form at all is refused.
 */
export function stringifyJson(value: unknown, label: string, streamId: string): string {
  if (isBytes(value)) {
    throw new StreamSerializationError(
      "streams/unserializable",
      `${label} for JSON stream "${streamId}" is binary data; open the stream with a binary content type (or encoding "binary") to store bytes.`,
      streamId,
    );
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (cause) {
    const found = findUnserializable(value, label, new Set());
    throw new StreamSerializationError(
      "streams/unserializable",
      `${found ?? label} for stream "${streamId}" cannot be stored as JSON: ${(cause as Error)?.message ?? String(cause)}.`,
      streamId,
      cause,
    );
  }
  if (json === undefined) {
    throw new StreamSerializationError(
      "streams/unserializable",
      `${label} for stream "${streamId}" is ${describe(value)}, which has no JSON form; append a JSON value.`,
      streamId,
    );
  }
  return json;
}

/** Walks a value that `JSON.stringify` refused and returns the path of the first culprit it finds. */
function findUnserializable(value: unknown, path: string, seen: Set<object>): string | null {
  if (typeof value === "bigint") return `${path} (a BigInt)`;
  if (value === null || typeof value !== "object") return null;
  if (seen.has(value)) return `${path} (a circular reference)`;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return null;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = findUnserializable(value[index], `${path}[${index}]`, seen);
      if (found) return found;
    }
  } else {
    for (const [key, child] of Object.entries(value)) {
      const found = findUnserializable(child, `${path}.${key}`, seen);
      if (found) return found;
    }
  }
  seen.delete(value);
  return null;
}

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (typeof value === "function") return "a function";
  if (typeof value === "symbol") return "a symbol";
  if (typeof value === "bigint") return "a BigInt";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}
