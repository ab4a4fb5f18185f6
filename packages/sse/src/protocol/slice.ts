import type { StreamState, StreamStatus } from "@durablekit/streams";
import { bytesOf, messageOf } from "./codec";
import { isJsonMode } from "./headers";
import type { ProtocolLog } from "./log";

/** One read of a stream from a seq: what it returned and where the stream stood. */
export interface Slice {
  /** JSON mode: the messages; otherwise empty. */
  messages: string[];
  /** Byte mode: the bytes of the chunks; otherwise empty. */
  bytes: Uint8Array;
  /** Chunks read. */
  count: number;
  /** The seq after the last chunk read: where the next read starts. */
  next: number;
  /** The stream's cursor when read. */
  cursor: number;
  state: StreamState;
  /** True when the read reached the cursor. */
  upToDate: boolean;
}

const PAGE = 256;

/**
 * Reads chunks from `from` until the cursor or until `maxBytes` (always at least one chunk), all in
 * one synchronous run, so the cursor and state describe exactly what was read.
 * @throws StreamNotFoundError when the stream vanished.
 */
export function readSlice(
  streams: ProtocolLog,
  status: StreamStatus,
  from: number,
  maxBytes: number,
): Slice {
  const json = isJsonMode(status.contentType);
  const messages: string[] = [];
  const parts: Uint8Array[] = [];
  let bytes = 0;
  let next = from;
  for (;;) {
    const page = streams.readPage(status.streamId, { from: next, limit: PAGE });
    for (const { chunk } of page.chunks) {
      if (json) {
        const message = messageOf(status.encoding, chunk);
        messages.push(message);
        bytes += message.length;
      } else {
        const part = bytesOf(status.encoding, chunk);
        parts.push(part);
        bytes += part.byteLength;
      }
    }
    next = page.next;
    if (page.upToDate || page.chunks.length === 0 || bytes >= maxBytes) {
      return {
        messages,
        bytes: concatBytes(parts),
        count: messages.length + parts.length,
        next,
        cursor: page.cursor,
        state: page.state,
        upToDate: page.upToDate,
      };
    }
  }
}

/** The bytes of several arrays, back to back. */
function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.byteLength;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
