import { ChunkLog } from "./chunk-log";
import { DEFAULT_MAX_CHUNK_BYTES, encodeChunk } from "./codec";
import { type EntryHolder, StreamsCore, type WriteRequest } from "./core";
import { StreamNotFoundError, StreamsArgumentError } from "./errors";
import { EventSink } from "./events";
import { deleteStream, expiredAt, openStream, sweepExpired, touchStream } from "./lifecycle";
import { assertStreamId, readFrom, readOpenOptions } from "./options";
import { assertCounter, assertProducer, assertWriterSeq } from "./producer";
import { abortReason, type ReadTarget, readBatchesOf, readOf, readPageOf } from "./reader";
import { ensureSchema } from "./schema";
import { type StreamHead, StreamStore } from "./store";
import { cursorOf, listStreams, statusOf } from "./stream-status";
import type {
  StreamChunk,
  StreamDeleteOptions,
  StreamList,
  StreamListOptions,
  StreamOpenOptions,
  StreamPage,
  StreamReadBatchesOptions,
  StreamReadOptions,
  StreamStatus,
  StreamSweepResult,
  StreamsOptions,
  StreamValue,
  StreamWriteOptions,
  StreamWriteResult,
  StreamWriter,
} from "./types";
import { WaitRegistry } from "./wait-registry";

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
      new ChunkLog(ctx.storage.sql),
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
    return openStream(this.#core, streamId, options, config, this.#maxChunkBytes);
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
    const holder: EntryHolder = { entry: this.#core.entries.entryFor(row) };
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
      cursorOf(this.#core, row),
    ) as StreamPage<T>;
  }

  /** The stream's state and cursor, or null when it does not exist (or has expired). */
  status(streamId: string): StreamStatus | null {
    assertStreamId(streamId);
    this.#init();
    const row = this.#core.store.byId(streamId);
    if (row === null) return null;
    return statusOf(this.#core, row, this.#core.now());
  }

  /**
   * Lists streams newest first, optionally by tag (indexed) and state, a page at a time.
   * @throws {StreamsArgumentError} for a malformed `limit` or `after`.
   */
  list(options: StreamListOptions = {}): StreamList {
    this.#init();
    return listStreams(this.#core, options);
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
    return deleteStream(this.#core, streamId, options);
  }

  /**
   * Extends a sliding TTL from now (one row write): what a read that should keep a stream alive
   * calls. No write for a stream without `ttlMs`.
   * @returns false when the stream does not exist (or has expired).
   */
  touch(streamId: string): boolean {
    assertStreamId(streamId);
    this.#init();
    return touchStream(this.#core, streamId);
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
    return sweepExpired(this.#core, this.#sweepLimit);
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
    if (row === null || expiredAt(this.#core, row, this.#core.now()))
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
}
