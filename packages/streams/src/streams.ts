import { DEFAULT_MAX_CHUNK_BYTES, encodeChunk, encodingFor } from "./codec";
import { type EntryHolder, StreamsCore, type WriteRequest } from "./core";
import {
  ProducerFencedError,
  StreamClosedError,
  StreamLiveError,
  StreamNotFoundError,
  StreamsArgumentError,
} from "./errors";
import { EventSink } from "./events";
import {
  assertStreamId,
  checkConfig,
  DEFAULT_CONTENT_TYPE,
  readFrom,
  readOpenOptions,
} from "./options";
import { assertCounter, assertProducer, assertWriterSeq } from "./producer";
import { abortReason, type ReadTarget, readBatchesOf, readOf, readPageOf } from "./reader";
import { expiryOf, isExpired } from "./retention";
import { ensureSchema } from "./schema";
import { type StreamHead, type StreamRow, StreamStore } from "./store";
import type {
  StreamChunk,
  StreamDeleteOptions,
  StreamList,
  StreamListOptions,
  StreamOpenOptions,
  StreamPage,
  StreamReadBatchesOptions,
  StreamReadOptions,
  StreamState,
  StreamStatus,
  StreamSweepResult,
  StreamsOptions,
  StreamValue,
  StreamWriteOptions,
  StreamWriteResult,
  StreamWriter,
} from "./types";
import { WaitRegistry } from "./wait-registry";
import { Writer } from "./writer";

/**
 * Durable, ordered chunk logs in a Durable Object's SQLite: one per stream id, with a gapless
 * monotonic cursor, replay-then-tail reads that do not depend on the producer, producer fencing
 * and sliding-TTL retention.
 *
 * Construct one per object (`new Streams(ctx)`, typically in the constructor); it owns the
 * `dk_streams_*` tables. Every method is synchronous except the read generators. It never sets the
 * alarm: the host calls {@link alarm} from its own and re-arms to the earliest
 * {@link nextWakeAt} of all its parts. Live readers are woken in-isolate, so use one instance per
 * object.
 */
export class Streams {
  readonly #storage: DurableObjectStorage;
  readonly #maxChunkBytes: number;
  readonly #sweepLimit: number;
  readonly #core: StreamsCore;
  #ready = false;
  readonly #resolveTarget = (streamId: string, signal: AbortSignal | undefined): ReadTarget =>
    this.#readTarget(streamId, signal);

  constructor(ctx: { storage: DurableObjectStorage }, options: StreamsOptions = {}) {
    const maxChunkBytes = options.maxChunkBytes ?? DEFAULT_MAX_CHUNK_BYTES;
    if (!Number.isInteger(maxChunkBytes) || maxChunkBytes < 1) {
      throw new StreamsArgumentError(
        `maxChunkBytes must be a positive integer; got ${maxChunkBytes}.`,
      );
    }
    this.#storage = ctx.storage;
    this.#maxChunkBytes = maxChunkBytes;
    this.#sweepLimit = Math.max(1, Math.floor(options.sweepLimit ?? 500));
    this.#core = new StreamsCore(
      new StreamStore(ctx.storage),
      new WaitRegistry(),
      new EventSink(options.onEvent),
      options.now ?? Date.now,
      options.armAlarm,
    );
  }

  /**
   * Opens a stream for writing, creating it if needed. Idempotent on the id: a live stream returns a
   * writer at its cursor; an expired one is replaced by a new stream. With `producer`, a settled
   * stream still returns a writer, so a replayed producer gets its earlier writes answered as
   * duplicates (exactly once across replays); any new write through it is refused as closed.
   * @throws {StreamClosedError} `streams/closed` when the stream already settled (without `producer`).
   * @throws {StreamConfigConflictError} `streams/config-conflict` when a given option differs from the live stream's.
   * @throws {ProducerFencedError} `streams/fenced` when `producer.epoch` is older than the stream has seen.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for malformed options.
   */
  open(streamId: string, options: StreamOpenOptions = {}): StreamWriter {
    assertStreamId(streamId);
    const config = readOpenOptions(streamId, options);
    this.#init();
    const { store } = this.#core;
    const now = this.#core.now();
    let row = store.byId(streamId);
    let replaced: StreamRow | null = null;
    if (row !== null && this.#expiredAt(row, now)) {
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
      const entry = this.#core.entryFor(row);
      if (options.producer !== undefined) {
        // Fence a stale producer at open; every write checks again.
        const current = this.#core.producerEpoch(entry, options.producer.id);
        if (current !== null && options.producer.epoch < current) {
          throw new ProducerFencedError(
            streamId,
            options.producer.id,
            current,
            options.producer.epoch,
          );
        }
      }
      return new Writer(this.#core, entry, false, options.producer, this.#maxChunkBytes);
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
    if (replaced !== null) this.#afterPurge(replaced, "expired");
    // A rolled-back host transaction can leave an entry cached for an id (even a key) that storage
    // never kept; a new stream always starts from a new entry.
    this.#core.forget(streamId);
    this.#core.events.emit({
      type: "stream:opened",
      streamId,
      ...(fresh.tag !== null ? { tag: fresh.tag } : {}),
    });
    if (wakeAt !== null) this.#core.armAlarm?.(wakeAt);
    return new Writer(
      this.#core,
      this.#core.entryFor(fresh),
      true,
      options.producer,
      this.#maxChunkBytes,
    );
  }

  /**
   * One write to an existing stream without a writer: the form a protocol handler uses per request.
   * `producer` carries the whole `(id, epoch, seq)`; `settle` settles the stream after the chunks, in
   * the same transaction. A bare settle of a settled stream is a no-op; a producer retry of a write
   * that settled the stream is reported as a duplicate.
   * @throws {StreamNotFoundError} `streams/not-found` when the stream does not exist.
   * @throws as {@link StreamWriter.append}.
   */
  write(
    streamId: string,
    chunks: readonly StreamValue[],
    options: StreamWriteOptions = {},
  ): StreamWriteResult {
    assertStreamId(streamId);
    this.#init();
    const row = this.#liveRow(streamId);
    const holder: EntryHolder = { entry: this.#core.entryFor(row) };
    const request: WriteRequest = {
      bodies: chunks.map((chunk) =>
        encodeChunk(row.encoding, chunk, this.#maxChunkBytes, streamId),
      ),
    };
    if (options.producer !== undefined) {
      assertProducer(options.producer, streamId);
      assertCounter(options.producer.seq, "producer seq", streamId);
      request.producer = { ...options.producer };
    }
    if (options.writerSeq !== undefined) {
      assertWriterSeq(options.writerSeq, streamId);
      request.writerSeq = options.writerSeq;
    }
    if (options.settle !== undefined) {
      request.settle =
        options.settle === true
          ? { state: "completed", reason: null }
          : { state: "errored", reason: options.settle.error ?? null };
    }
    return this.#core.write(holder, request);
  }

  /**
   * Replays a stream from `from` (inclusive), then tails live appends; ends when the stream is
   * settled and every chunk has been yielded, or quietly when it is deleted.
   * @throws {StreamNotFoundError} `streams/not-found` (at the first iteration) when the stream does not exist.
   * @throws the signal's reason when `signal` aborts.
   */
  read<T = unknown>(
    streamId: string,
    options: StreamReadOptions = {},
  ): AsyncGenerator<StreamChunk<T>, void, undefined> {
    const { signal } = options;
    return readOf(
      this.#core,
      this.#resolveTarget,
      streamId,
      readFrom(options.from),
      signal,
    ) as AsyncGenerator<StreamChunk<T>, void, undefined>;
  }

  /**
   * {@link read} in non-empty arrays: replay in slices of `batchSize`; each live wakeup yields
   * everything new as one array. `onUpToDate` fires once, when the reader first reaches the tail.
   * @throws as {@link read}.
   */
  readBatches<T = unknown>(
    streamId: string,
    options: StreamReadBatchesOptions = {},
  ): AsyncGenerator<StreamChunk<T>[], void, undefined> {
    const { signal } = options;
    const batchSize = Math.max(1, Math.floor(options.batchSize ?? 100));
    return readBatchesOf(
      this.#core,
      this.#resolveTarget,
      streamId,
      readFrom(options.from),
      batchSize,
      signal,
      options.onUpToDate,
    ) as AsyncGenerator<StreamChunk<T>[], void, undefined>;
  }

  /**
   * Reads up to `limit` chunks from `from` synchronously, with the cursor and state at that moment:
   * a catch-up read that never waits.
   * @throws {StreamNotFoundError} `streams/not-found`.
   */
  readPage<T = unknown>(
    streamId: string,
    options: { from?: number; limit?: number } = {},
  ): StreamPage<T> {
    assertStreamId(streamId);
    this.#init();
    const row = this.#liveRow(streamId);
    const target: ReadTarget = { key: row.stream_key, streamId, encoding: row.encoding };
    const limit = Math.max(1, Math.floor(options.limit ?? 100));
    return readPageOf(
      this.#core,
      target,
      readFrom(options.from),
      limit,
      row.state,
      this.#cursorOf(row),
    ) as StreamPage<T>;
  }

  /** The stream's state and cursor, or null when it does not exist (or has expired). */
  status(streamId: string): StreamStatus | null {
    assertStreamId(streamId);
    this.#init();
    const row = this.#core.store.byId(streamId);
    if (row === null) return null;
    return this.#statusOf(row, this.#core.now());
  }

  /**
   * Lists streams newest first, optionally by tag (indexed) and state, a page at a time.
   * @throws {StreamsArgumentError} for a malformed `limit` or `after`.
   */
  list(options: StreamListOptions = {}): StreamList {
    this.#init();
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new StreamsArgumentError(
        `list() limit must be an integer from 1 to 1000; got ${limit}.`,
      );
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
    const rows = this.#core.store.list(options.tag, states, before, limit);
    const now = this.#core.now();
    const streams: StreamStatus[] = [];
    for (const row of rows) {
      const status = this.#statusOf(row, now);
      if (status !== null) streams.push(status);
    }
    const last = rows[rows.length - 1];
    return { streams, next: rows.length === limit && last ? String(last.stream_key) : null };
  }

  /**
   * Deletes a stream, its chunks and its producer state. A live stream is refused unless `force`;
   * readers tailing it are woken and end.
   * @returns true when a stream was deleted, false when none exists.
   * @throws {StreamLiveError} `streams/delete-live` for a live stream without `force`.
   */
  delete(streamId: string, options: StreamDeleteOptions = {}): boolean {
    assertStreamId(streamId);
    this.#init();
    const { store } = this.#core;
    const row = store.byId(streamId);
    if (row === null) return false;
    if (row.state === "streaming" && options.force !== true) throw new StreamLiveError(streamId);
    store.transaction(() => store.deleteStream(row.stream_key));
    this.#afterPurge(row, row.state === "streaming" ? "forced" : "deleted");
    return true;
  }

  /**
   * Extends a sliding TTL from now (one row write): what a read that should keep a stream alive
   * calls. No write for a stream without `ttlMs`.
   * @returns false when the stream does not exist (or has expired).
   */
  touch(streamId: string): boolean {
    assertStreamId(streamId);
    this.#init();
    const { store } = this.#core;
    const row = store.headById(streamId);
    const now = this.#core.now();
    if (row === null || this.#expiredAt(row, now)) return false;
    if (row.ttl_ms !== null) {
      store.touch(row.stream_key, now, expiryOf({ ...row, touched_at: now }, null));
    }
    return true;
  }

  /**
   * When retention next needs the alarm (epoch ms), or null. It is a lower bound: a stream that was
   * appended to since may turn out not to be due, and `alarm()` then moves its wake later.
   */
  nextWakeAt(): number | null {
    this.#init();
    return this.#core.store.earliestWake();
  }

  /**
   * Retention sweep, for the host's `alarm()`: deletes every stream whose expiry has passed (up to
   * `sweepLimit`), reading its stream row and, for a live stream, its newest chunk — never scanning
   * chunks to decide. Streams not yet due get their wake moved to their true expiry.
   */
  alarm(): StreamSweepResult {
    this.#init();
    const { store } = this.#core;
    const now = this.#core.now();
    const expired: string[] = [];
    for (const row of store.due(now, this.#sweepLimit)) {
      const expiry = expiryOf(row, this.#lastAppendAt(row));
      if (isExpired(expiry, now)) {
        store.transaction(() => store.deleteStream(row.stream_key));
        this.#afterPurge(row, "expired");
        expired.push(row.stream_id);
      } else {
        store.setWake(row.stream_key, expiry);
      }
    }
    return { expired, nextWakeAt: store.earliestWake() };
  }

  /** How many readers are parked on live tails in this isolate, over how many streams. */
  waitStats(): { streams: number; readers: number } {
    return this.#core.waits.stats();
  }

  #init(): void {
    if (this.#ready) return;
    ensureSchema(this.#storage);
    this.#ready = true;
  }

  /** A row that exists and has not expired, or a not-found error. */
  #liveRow(streamId: string): StreamHead {
    const row = this.#core.store.headById(streamId);
    if (row === null || this.#expiredAt(row, this.#core.now()))
      throw new StreamNotFoundError(streamId);
    return row;
  }

  #readTarget(streamId: string, signal: AbortSignal | undefined): ReadTarget {
    if (signal?.aborted) throw abortReason(signal);
    assertStreamId(streamId);
    this.#init();
    const row = this.#liveRow(streamId);
    return { key: row.stream_key, streamId, encoding: row.encoding };
  }

  #lastAppendAt(row: StreamHead): number | null {
    if (row.state !== "streaming") return null;
    const cached = this.#core.cached(row.stream_id);
    if (cached !== undefined && cached.key === row.stream_key) return cached.lastAppendAt;
    return this.#core.store.tail(row.stream_key)?.at ?? null;
  }

  #expiredAt(row: StreamHead, now: number): boolean {
    if (row.ttl_ms === null && row.expires_at === null) return false;
    return isExpired(expiryOf(row, this.#lastAppendAt(row)), now);
  }

  #cursorOf(row: StreamHead): number {
    if (row.state !== "streaming") return row.final_cursor ?? 0;
    return (this.#core.store.tail(row.stream_key)?.seq ?? -1) + 1;
  }

  #statusOf(row: StreamRow, now: number): StreamStatus | null {
    const tail = row.state === "streaming" ? this.#core.store.tail(row.stream_key) : null;
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

  /** After a stream's rows are gone: forget it, end its readers, report it. */
  #afterPurge(row: StreamRow, why: "deleted" | "forced" | "expired"): void {
    this.#core.forget(row.stream_id, row.stream_key);
    this.#core.waits.wake(row.stream_key, true);
    this.#core.events.emit(
      why === "expired"
        ? { type: "stream:expired", streamId: row.stream_id }
        : { type: "stream:deleted", streamId: row.stream_id, forced: why === "forced" },
    );
  }
}
