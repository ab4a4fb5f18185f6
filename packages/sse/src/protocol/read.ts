import type { StreamStatus } from "@durablekit/streams";
import { utf8 } from "../frames";
import { reportedExpiry } from "./config";
import { responseCursor } from "./cursor";
import { H, isJsonMode } from "./headers";
import { jsonArray } from "./json-mode";
import { handleSse } from "./live";
import { formatOffset, parseOffset } from "./offsets";
import { baseHeaders, problem } from "./responses";
import { readSlice, type Slice } from "./slice";
import type { ReadContext } from "./types";
import { waitForData } from "./wait";

/** Cache policy of a catch-up response that carries data: the range's bytes never change. */
const DATA_CACHE = "private, max-age=60, stale-while-revalidate=300";

/** HEAD: the stream's metadata, no body, never cached; it does not refresh a sliding TTL (§5.5). */
export async function handleHead(ctx: ReadContext, streamId: string): Promise<Response> {
  const view = await ctx.view(streamId);
  if (view.kind === "absent") return problem(404, "", undefined, true);
  if (view.kind === "gone") return problem(410, "", undefined, true);
  const { status } = view;
  const headers = baseHeaders({
    "Content-Type": status.contentType,
    [H.nextOffset]: formatOffset(status.cursor),
    "Cache-Control": "no-store",
  });
  const expiry = reportedExpiry(status);
  if (expiry.ttl !== null) headers.set(H.ttl, expiry.ttl);
  if (expiry.expiresAt !== null) headers.set(H.expiresAt, expiry.expiresAt);
  if (status.state !== "streaming") headers.set(H.closed, "true");
  return new Response(null, { status: 200, headers });
}

/** The entity tag of a read: the stream's incarnation, the range, and closure at the tail. */
function etagOf(status: StreamStatus, start: number, slice: Slice, closedAtTail: boolean): string {
  let id = "";
  for (const byte of utf8(status.streamId)) id += byte.toString(16).padStart(2, "0");
  return `"${id}.${status.createdAt.toString(36)}:${start}:${slice.next}${closedAtTail ? ":c" : ""}"`;
}

/** A 200 carrying a slice, with the protocol's read headers (or a 304 for a matching ETag). */
function sliceResponse(
  request: Request,
  status: StreamStatus,
  start: number,
  slice: Slice,
  cursor: string | null,
): Response {
  const closedAtTail = slice.state !== "streaming" && slice.next === slice.cursor;
  const etag = etagOf(status, start, slice, closedAtTail);
  const headers = baseHeaders({
    "Content-Type": status.contentType,
    [H.nextOffset]: formatOffset(slice.next),
    ETag: etag,
    "Cache-Control": slice.count === 0 ? "no-store" : DATA_CACHE,
  });
  if (slice.upToDate) headers.set(H.upToDate, "true");
  if (closedAtTail) headers.set(H.closed, "true");
  if (cursor !== null) headers.set(H.cursor, cursor);
  if (request.headers.get("if-none-match") === etag) {
    return new Response(null, { status: 304, headers });
  }
  const body = isJsonMode(status.contentType) ? utf8(jsonArray(slice.messages)) : slice.bytes;
  return new Response(body, { status: 200, headers });
}

/** A 204 of a long-poll that found nothing: the tail offset, caught up, and closure if any. */
function noContent(next: number, closed: boolean, cursor: string): Response {
  const headers = baseHeaders({
    [H.nextOffset]: formatOffset(next),
    [H.upToDate]: "true",
    "Cache-Control": "no-store",
  });
  if (closed) headers.set(H.closed, "true");
  else headers.set(H.cursor, cursor);
  return new Response(null, { status: 204, headers });
}

/**
 * GET: a catch-up read (§5.6), a long-poll (§5.7) or an SSE stream (§5.8) from `offset` (`-1`,
 * `now`, or an offset the server issued). Every read refreshes a sliding TTL when it starts.
 */
export async function handleGet(
  ctx: ReadContext,
  request: Request,
  streamId: string,
): Promise<Response> {
  const params = new URL(request.url).searchParams;
  const offsets = params.getAll("offset");
  if (offsets.length > 1) return problem(400, "Send one offset parameter.");
  const offsetText = offsets[0];
  if (offsetText === "") return problem(400, "The offset parameter is empty.");
  const offset = offsetText === undefined ? null : parseOffset(offsetText);
  if (offset?.kind === "invalid") return problem(400, offset.reason);
  const live = params.get("live");
  if (live !== null && live !== "long-poll" && live !== "sse") {
    return problem(400, `live must be long-poll or sse; got "${live}".`);
  }
  if (live !== null && offset === null) {
    return problem(400, `live=${live} needs an offset (use -1 for the start, now for the tail).`);
  }

  const view = await ctx.view(streamId);
  if (view.kind === "absent") return problem(404, `Stream "${streamId}" does not exist.`);
  if (view.kind === "gone") return problem(410, `Stream "${streamId}" was deleted.`);
  const { status } = view;
  const start = offset === null ? 0 : offset.kind === "now" ? status.cursor : offset.seq;
  if (start > status.cursor) return problem(400, "The offset is beyond the stream's tail.");
  ctx.streams.touch(streamId);
  const clientCursor = params.get("cursor");

  if (live === "sse") return handleSse(ctx, request, status, start, clientCursor);

  if (offset?.kind === "now" && live === null) {
    const headers = baseHeaders({
      "Content-Type": status.contentType,
      [H.nextOffset]: formatOffset(status.cursor),
      [H.upToDate]: "true",
      "Cache-Control": "no-store",
    });
    if (status.state !== "streaming") headers.set(H.closed, "true");
    return new Response(isJsonMode(status.contentType) ? "[]" : null, { status: 200, headers });
  }

  let slice = readSlice(ctx.streams, status, start, ctx.maxReadBytes);
  if (live === null) return sliceResponse(request, status, start, slice, null);

  const cursor = () => responseCursor(clientCursor, ctx.now(), ctx.cursorIntervalMs);
  if (slice.count === 0) {
    if (slice.state !== "streaming") return noContent(slice.next, true, cursor());
    const outcome = await waitForData(
      ctx.streams,
      streamId,
      start,
      ctx.longPollTimeoutMs,
      request.signal,
    );
    const after = ctx.streams.status(streamId);
    if (after === null || after.createdAt !== status.createdAt) {
      return problem(404, `Stream "${streamId}" was deleted.`);
    }
    if (outcome !== "data") return noContent(start, after.state !== "streaming", cursor());
    slice = readSlice(ctx.streams, after, start, ctx.maxReadBytes);
    if (slice.count === 0) return noContent(start, slice.state !== "streaming", cursor());
  }
  return sliceResponse(request, status, start, slice, cursor());
}
