/** Header names of the Durable Streams protocol (case-insensitive on the wire). */
export const H = {
  nextOffset: "Stream-Next-Offset",
  upToDate: "Stream-Up-To-Date",
  cursor: "Stream-Cursor",
  closed: "Stream-Closed",
  ttl: "Stream-TTL",
  expiresAt: "Stream-Expires-At",
  seq: "Stream-Seq",
  forkedFrom: "Stream-Forked-From",
  forkOffset: "Stream-Fork-Offset",
  forkSubOffset: "Stream-Fork-Sub-Offset",
  producerId: "Producer-Id",
  producerEpoch: "Producer-Epoch",
  producerSeq: "Producer-Seq",
  expectedSeq: "Producer-Expected-Seq",
  receivedSeq: "Producer-Received-Seq",
  sseEncoding: "Stream-SSE-Data-Encoding",
} as const;

/** A parsed header, or a reason to answer 400. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const CANONICAL_INTEGER = /^(0|[1-9]\d*)$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** A non-negative integer in canonical decimal (no sign, no leading zeros, no exponent), ≤ 2^53-1. */
export function canonicalInteger(text: string): number | null {
  if (!CANONICAL_INTEGER.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

/** `Stream-Closed` counts only when it is exactly `true` (any case); other values are ignored. */
export function closedFlag(headers: Headers): boolean {
  return headers.get(H.closed)?.trim().toLowerCase() === "true";
}

/** The expiry a PUT asks for: a sliding TTL in seconds, or an absolute time, never both. */
export interface ExpiryRequest {
  ttlSeconds: number | null;
  expiresAt: number | null;
}

/** Reads `Stream-TTL` and `Stream-Expires-At` of a PUT. */
export function parseExpiry(headers: Headers): Parsed<ExpiryRequest> {
  const ttlText = headers.get(H.ttl);
  const expiresText = headers.get(H.expiresAt);
  if (ttlText !== null && expiresText !== null) {
    return { ok: false, reason: "Send Stream-TTL or Stream-Expires-At, not both." };
  }
  let ttlSeconds: number | null = null;
  if (ttlText !== null) {
    ttlSeconds = canonicalInteger(ttlText.trim());
    if (ttlSeconds === null) {
      return {
        ok: false,
        reason: `Stream-TTL must be a non-negative integer of seconds without sign or leading zeros; got "${ttlText}".`,
      };
    }
  }
  let expiresAt: number | null = null;
  if (expiresText !== null) {
    const trimmed = expiresText.trim();
    const ms = RFC3339.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
    if (!Number.isFinite(ms)) {
      return {
        ok: false,
        reason: `Stream-Expires-At must be an RFC 3339 timestamp; got "${expiresText}".`,
      };
    }
    expiresAt = ms;
  }
  return { ok: true, value: { ttlSeconds, expiresAt } };
}

/** The idempotent-producer triple of an append. */
export interface ProducerRequest {
  id: string;
  epoch: number;
  seq: number;
}

/** Reads `Producer-Id`, `Producer-Epoch` and `Producer-Seq`: all three or none. */
export function parseProducer(headers: Headers): Parsed<ProducerRequest | null> {
  const id = headers.get(H.producerId);
  const epochText = headers.get(H.producerEpoch);
  const seqText = headers.get(H.producerSeq);
  if (id === null && epochText === null && seqText === null) return { ok: true, value: null };
  if (id === null || epochText === null || seqText === null) {
    return {
      ok: false,
      reason: "Producer-Id, Producer-Epoch and Producer-Seq go together: send all three or none.",
    };
  }
  if (id.length === 0 || id.length > 256) {
    return {
      ok: false,
      reason: "Producer-Id must be a non-empty string of at most 256 characters.",
    };
  }
  const epoch = canonicalInteger(epochText.trim());
  const seq = canonicalInteger(seqText.trim());
  if (epoch === null || seq === null) {
    return {
      ok: false,
      reason: "Producer-Epoch and Producer-Seq must be integers from 0 to 2^53-1 in plain decimal.",
    };
  }
  return { ok: true, value: { id, epoch, seq } };
}

/** The media type of a content type: lower-cased, without parameters. */
export function mediaType(contentType: string): string {
  return (contentType.split(";")[0] ?? "").trim().toLowerCase();
}

/** True when a content type puts a stream in JSON mode (`application/json`, any parameters). */
export function isJsonMode(contentType: string): boolean {
  return mediaType(contentType) === "application/json";
}

/** True when SSE can carry the stream's bytes as text (`text/*`, `application/json`); else base64. */
export function isTextCompatible(contentType: string): boolean {
  const media = mediaType(contentType);
  return media.startsWith("text/") || media === "application/json";
}
