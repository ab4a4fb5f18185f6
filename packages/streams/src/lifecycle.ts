import { encodingFor } from "./codec";
import type { StreamsCore } from "./core";
import { ProducerFencedError, StreamClosedError, StreamLiveError } from "./errors";
import { checkConfig, DEFAULT_CONTENT_TYPE, type OpenConfig } from "./options";
import { expiryOf, isExpired } from "./retention";
import type { StreamHead, StreamRow } from "./store";
import type {
  StreamDeleteOptions,
  StreamOpenOptions,
  StreamSweepResult,
  StreamWriter,
} from "./types";
import { Writer } from "./writer";

// The lifecycle of a stream row behind `Streams`: open (create, reuse or replace an expired one),
// delete, sliding-TTL touch and the retention sweep, plus the expiry checks they share. Arguments
// are validated and the schema ensured by the caller.

/** `Streams.open` after validation: a writer on the live stream, or on a newly created one. */
export function openStream(
  core: StreamsCore,
  streamId: string,
  options: StreamOpenOptions,
  config: OpenConfig,
  maxChunkBytes: number,
): StreamWriter {
  const { store } = core;
  const now = core.now();
  let row = store.byId(streamId);
  let replaced: StreamRow | null = null;
  if (row !== null && expiredAt(core, row, now)) {
    replaced = row;
    row = null;
  }
  if (row !== null) {
    // A producer may be replaying writes it already made, so it still gets a writer: its retries
    // are answered as duplicates and anything new is refused as closed.
    if (row.state !== "streaming" && options.producer === undefined) {
      throw new StreamClosedError(streamId, row.state, row.final_cursor ?? undefined);
    }
    checkConfig(row, options, config);
    const entry = core.entries.entryFor(row);
    if (options.producer !== undefined) {
      // Fence a stale producer at open; every write checks again.
      const current = core.entries.producerEpoch(entry, options.producer.id);
      if (current !== null && options.producer.epoch < current) {
        throw new ProducerFencedError(
          streamId,
          options.producer.id,
          current,
          options.producer.epoch,
        );
      }
    }
    return new Writer(core, entry, false, options.producer, maxChunkBytes);
  }

  const encoding = options.encoding ?? encodingFor(options.contentType ?? "application/json");
  const contentType = options.contentType ?? DEFAULT_CONTENT_TYPE[encoding];
  const wakeAt = expiryOf(
    { ttl_ms: config.ttlMs, expires_at: config.expiresAt, touched_at: now },
    null,
  );
  const fresh: StreamRow = {
    stream_key: 0,
    stream_id: streamId,
    state: "streaming",
    content_type: contentType,
    encoding,
    tag: options.tag ?? null,
    metadata: config.metadata,
    error: null,
    ttl_ms: config.ttlMs,
    expires_at: config.expiresAt,
    created_at: now,
    touched_at: now,
    closed_at: null,
    final_cursor: null,
    closer_producer: null,
    closer_epoch: null,
    closer_seq: null,
    wake_at: wakeAt,
  };
  fresh.stream_key = store.transaction(() => {
    if (replaced !== null) store.deleteStream(replaced.stream_key);
    return store.insertStream({
      streamId,
      contentType,
      encoding,
      tag: fresh.tag,
      metadata: fresh.metadata,
      ttlMs: fresh.ttl_ms,
      expiresAt: fresh.expires_at,
      now,
      wakeAt,
    });
  });
  if (replaced !== null) afterPurge(core, replaced, "expired");
  // A rolled-back host transaction can leave an entry cached for an id (even a key) that storage
  // never kept; a new stream always starts from a new entry.
  core.entries.forget(streamId);
  core.events.emit({
    type: "stream:opened",
    streamId,
    ...(fresh.tag !== null ? { tag: fresh.tag } : {}),
  });
  if (wakeAt !== null) core.armAlarm?.(wakeAt);
  return new Writer(core, core.entries.entryFor(fresh), true, options.producer, maxChunkBytes);
}

/** `Streams.delete` after validation: whether a stream was deleted. */
export function deleteStream(
  core: StreamsCore,
  streamId: string,
  options: StreamDeleteOptions,
): boolean {
  const { store } = core;
  const row = store.byId(streamId);
  if (row === null) return false;
  if (row.state === "streaming" && options.force !== true) throw new StreamLiveError(streamId);
  store.transaction(() => store.deleteStream(row.stream_key));
  afterPurge(core, row, row.state === "streaming" ? "forced" : "deleted");
  return true;
}

/** `Streams.touch` after validation: extends a sliding TTL; false for a missing or expired stream. */
export function touchStream(core: StreamsCore, streamId: string): boolean {
  const { store } = core;
  const row = store.headById(streamId);
  const now = core.now();
  if (row === null || expiredAt(core, row, now)) return false;
  if (row.ttl_ms !== null) {
    store.touch(row.stream_key, now, expiryOf({ ...row, touched_at: now }, null));
  }
  return true;
}

/** `Streams.alarm` after the schema check: deletes due streams, moves the wake of the rest. */
export function sweepExpired(core: StreamsCore, sweepLimit: number): StreamSweepResult {
  const { store } = core;
  const now = core.now();
  const expired: string[] = [];
  for (const row of store.due(now, sweepLimit)) {
    const expiry = expiryOf(row, lastAppendAt(core, row));
    if (isExpired(expiry, now)) {
      store.transaction(() => store.deleteStream(row.stream_key));
      afterPurge(core, row, "expired");
      expired.push(row.stream_id);
    } else {
      store.setWake(row.stream_key, expiry);
    }
  }
  return { expired, nextWakeAt: store.earliestWake() };
}

/** After a stream's rows are gone: forget it, end its readers, report it. */
export function afterPurge(
  core: StreamsCore,
  row: StreamRow,
  why: "deleted" | "forced" | "expired",
): void {
  core.entries.forget(row.stream_id, row.stream_key);
  core.waits.wake(row.stream_key, true);
  core.events.emit(
    why === "expired"
      ? { type: "stream:expired", streamId: row.stream_id }
      : { type: "stream:deleted", streamId: row.stream_id, forced: why === "forced" },
  );
}

/** The time of a live stream's newest chunk (from this isolate's entry when it has one), or null. */
export function lastAppendAt(core: StreamsCore, row: StreamHead): number | null {
  if (row.state !== "streaming") return null;
  const cached = core.entries.cached(row.stream_id);
  if (cached !== undefined && cached.key === row.stream_key) return cached.lastAppendAt;
  return core.chunks.tail(row.stream_key)?.at ?? null;
}

/** True when a stream row has expired at `now`, counting its newest chunk as activity. */
export function expiredAt(core: StreamsCore, row: StreamHead, now: number): boolean {
  if (row.ttl_ms === null && row.expires_at === null) return false;
  return isExpired(expiryOf(row, lastAppendAt(core, row)), now);
}
