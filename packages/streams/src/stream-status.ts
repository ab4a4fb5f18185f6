import type { StreamsCore } from "./core";
import { StreamsArgumentError } from "./errors";
import { expiryOf, isExpired } from "./retention";
import type { StreamHead, StreamRow } from "./store";
import type { StreamList, StreamListOptions, StreamState, StreamStatus } from "./types";

// The read-only view of stream rows behind `Streams.status`, `Streams.list` and `readPage`: a
// row's cursor and public status as of now, and pages of the listing.

/** `Streams.list` after the schema check: one page of statuses, newest first. */
export function listStreams(core: StreamsCore, options: StreamListOptions): StreamList {
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new StreamsArgumentError(`list() limit must be an integer from 1 to 1000; got ${limit}.`);
  }
  let before = Number.MAX_SAFE_INTEGER;
  if (options.after !== undefined) {
    before = Number(options.after);
    if (!/^\d+$/.test(options.after) || !Number.isSafeInteger(before)) {
      throw new StreamsArgumentError(
        `list() after must be the next token of a previous page; got ${JSON.stringify(options.after)}.`,
      );
    }
  }
  const states: StreamState[] =
    options.state === undefined
      ? []
      : Array.isArray(options.state)
        ? options.state
        : [options.state];
  const rows = core.store.list(options.tag, states, before, limit);
  const now = core.now();
  const streams: StreamStatus[] = [];
  for (const row of rows) {
    const status = statusOf(core, row, now);
    if (status !== null) streams.push(status);
  }
  const last = rows[rows.length - 1];
  return { streams, next: rows.length === limit && last ? String(last.stream_key) : null };
}

/** A stream row as the public status, with its cursor and true expiry; null once it has expired. */
export function statusOf(core: StreamsCore, row: StreamRow, now: number): StreamStatus | null {
  const tail = row.state === "streaming" ? core.chunks.tail(row.stream_key) : null;
  const lastAppendAt = tail?.at ?? null;
  const expiresAt = expiryOf(row, lastAppendAt);
  if (isExpired(expiresAt, now)) return null;
  const status: StreamStatus = {
    streamId: row.stream_id,
    state: row.state,
    cursor: row.state === "streaming" ? (tail?.seq ?? -1) + 1 : (row.final_cursor ?? 0),
    contentType: row.content_type,
    encoding: row.encoding,
    createdAt: row.created_at,
    updatedAt: Math.max(row.touched_at, lastAppendAt ?? 0),
  };
  if (row.tag !== null) status.tag = row.tag;
  if (row.metadata !== null) status.metadata = JSON.parse(row.metadata);
  if (row.error !== null) status.error = row.error;
  if (row.closed_at !== null) status.closedAt = row.closed_at;
  if (row.ttl_ms !== null) status.ttlMs = row.ttl_ms;
  if (expiresAt !== null) status.expiresAt = expiresAt;
  return status;
}

/** A stream's cursor: the final cursor of a settled stream, else one past the chunk log's tail. */
export function cursorOf(core: StreamsCore, row: StreamHead): number {
  if (row.state !== "streaming") return row.final_cursor ?? 0;
  return (core.chunks.tail(row.stream_key)?.seq ?? -1) + 1;
}
