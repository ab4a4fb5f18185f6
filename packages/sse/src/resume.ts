import { SseArgumentError } from "./errors";

const DIGITS = /^\d+$/;

/** A non-negative integer written in decimal digits only, or null. */
function nonNegativeInteger(text: string | null | undefined): number | null {
  if (text === null || text === undefined || !DIGITS.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

/**
 * Where an SSE read starts, in this order: an explicit `from` (clamped to ≥ 0); a present,
 * non-empty, integer `Last-Event-ID` ≥ 0, plus one (the event after the last one the client saw);
 * a non-negative integer `?from=N`; otherwise 0. An absent or empty header is never read as 0 —
 * that would skip chunk 0 on every fresh connection.
 *
 * With `cursor` (the stream's cursor now), a `Last-Event-ID` at or beyond it names no event the
 * stream has — it came from a previous incarnation of the id (deleted and opened again) or was
 * made up — so the read starts again from 0 instead of waiting for a seq that may never come.
 * @throws {SseArgumentError} `sse/invalid-argument` when `from` is not a finite number or `request` not a `Request`.
 */
export function resumeFrom(options: { request?: Request; from?: number }, cursor?: number): number {
  if (options === null || typeof options !== "object") {
    throw new SseArgumentError(`resumeFrom takes { request?, from? }; got ${String(options)}.`);
  }
  if (options.request !== undefined && !(options.request instanceof Request)) {
    throw new SseArgumentError("request must be the client's Request.");
  }
  if (options.from !== undefined) {
    if (typeof options.from !== "number" || !Number.isFinite(options.from)) {
      throw new SseArgumentError(`from must be a finite number; got ${String(options.from)}.`);
    }
    return Math.max(0, Math.floor(options.from));
  }
  const request = options.request;
  if (request === undefined) return 0;
  const lastEventId = nonNegativeInteger(request.headers.get("last-event-id")?.trim());
  if (lastEventId !== null)
    return cursor !== undefined && lastEventId >= cursor ? 0 : lastEventId + 1;
  return nonNegativeInteger(new URL(request.url).searchParams.get("from")) ?? 0;
}
