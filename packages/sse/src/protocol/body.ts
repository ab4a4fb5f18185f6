import { SseArgumentError } from "../errors";
import { problem } from "./responses";

/**
 * Bounded request bodies: a body is read only up to a byte limit. A `Content-Length` over the limit
 * is refused before a byte is read; a body without one (chunked) is counted as it streams and the
 * read is cancelled at the first chunk past the limit, so a 100 MB upload costs at most the limit
 * plus one network chunk of memory, never the whole body.
 */

/** A body read up to a limit: its bytes, or how it went past the limit. */
export type SseBoundedBody =
  | { ok: true; bytes: Uint8Array }
  | {
      ok: false;
      /** The declared `Content-Length` when that alone refused it, else null (counted while streaming). */
      declared: number | null;
      limit: number;
    };

/**
 * Reads the body of `request` (or of a `Response`: a webhook's answer, say), stopping at `maxBytes`.
 * @throws SseArgumentError `sse/invalid-argument` when `request` is neither a Request nor a Response,
 *   or `maxBytes` is not a non-negative integer.
 */
export async function readBoundedBody(
  request: Request | Response,
  maxBytes: number,
): Promise<SseBoundedBody> {
  if (!(request instanceof Request || request instanceof Response)) {
    throw new SseArgumentError("readBoundedBody takes a Request or a Response.");
  }
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new SseArgumentError(`maxBytes must be a non-negative integer; got ${String(maxBytes)}.`);
  }
  const lengthHeader = request.headers.get("content-length");
  const declared = lengthHeader === null ? Number.NaN : Number(lengthHeader);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await request.body?.cancel().catch(() => {});
    return { ok: false, declared, limit: maxBytes };
  }
  if (request.body === null) return { ok: true, bytes: new Uint8Array(0) };
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    // Invariant: at most `maxBytes` bytes are ever held; the chunk that crosses the limit is dropped.
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      return { ok: false, declared: null, limit: maxBytes };
    }
    parts.push(value);
  }
  if (parts.length === 1) return { ok: true, bytes: parts[0] as Uint8Array };
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return { ok: true, bytes };
}

/** Default of `maxWriteBytes`: most bytes one PUT or POST body may carry (a longer one is answered 413 unread). */
export const DEFAULT_MAX_WRITE_BYTES = 8 * 1_048_576;

/**
 * Default of `maxWriteMessages`: most messages one JSON-mode PUT or POST may append. Every message
 * is a row written in the request's one transaction, so this bounds the work (and the time the
 * stream is blocked) per write.
 */
export const DEFAULT_MAX_WRITE_MESSAGES = 10_000;

/**
 * A PUT or POST body, read up to `maxBytes`, or the 413 to answer (protocol status table: the body
 * is too large).
 */
export async function readWriteBody(
  request: Request,
  maxBytes: number,
): Promise<Uint8Array | Response> {
  const read = await readBoundedBody(request, maxBytes);
  if (read.ok) return read.bytes;
  return problem(413, `A request body may carry at most ${read.limit} bytes; split the write.`);
}

/** The 413 for a JSON write of more than `maxMessages` messages, or null when within. */
export function tooManyMessages(messages: readonly string[], maxMessages: number): Response | null {
  if (messages.length <= maxMessages) return null;
  return problem(
    413,
    `A JSON write may carry at most ${maxMessages} messages; this one has ${messages.length}. Split it.`,
  );
}
