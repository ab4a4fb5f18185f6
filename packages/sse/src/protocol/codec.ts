import type { StreamEncoding, StreamValue } from "@durablekit/streams";
import { utf8 } from "../frames";

const lenient = new TextDecoder();
/** A decoder that refuses bytes that are not UTF-8. */
export const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Conversions between what a `Streams` log stores and what the protocol carries. Streams the
 * handler creates use the `binary` encoding for every content type: a chunk is exactly the bytes
 * of one append, or the UTF-8 text of one JSON-mode message, as the producer sent it. (Text
 * columns would not do: SQLite gives the chunk column numeric affinity, so a message such as
 * `12345678901234567890` or `1.50` would come back as a rounded number.) Streams a host created
 * itself, in any encoding, are served too.
 */

/** A stored chunk as a JSON-mode message (JSON text). */
export function messageOf(encoding: StreamEncoding, chunk: unknown): string {
  if (encoding === "text") return typeof chunk === "string" ? chunk : String(chunk);
  if (encoding === "json") return JSON.stringify(chunk);
  return lenient.decode(chunk as Uint8Array);
}

/** A stored chunk as bytes. */
export function bytesOf(encoding: StreamEncoding, chunk: unknown): Uint8Array {
  if (encoding === "binary") return chunk as Uint8Array;
  if (encoding === "text") return utf8(typeof chunk === "string" ? chunk : String(chunk));
  return utf8(JSON.stringify(chunk));
}

/** The encoding of every stream the handler creates (see above). */
export const PROTOCOL_ENCODING: StreamEncoding = "binary";

/** A JSON-mode message as the value to store in a stream of `encoding`. */
export function storedMessage(encoding: StreamEncoding, message: string): StreamValue {
  if (encoding === "text") return message;
  if (encoding === "json") return JSON.parse(message) as StreamValue;
  return utf8(message);
}

/** A byte body as the value to store in a stream of `encoding`, or null when it cannot be stored. */
export function storedBytes(encoding: StreamEncoding, bytes: Uint8Array): StreamValue | null {
  if (encoding === "binary") return bytes;
  try {
    const text = strictUtf8.decode(bytes);
    return encoding === "text" ? text : (JSON.parse(text) as StreamValue);
  } catch {
    return null;
  }
}
