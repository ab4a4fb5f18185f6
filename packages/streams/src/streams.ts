import { type AlarmPart, claimPart, requestWake } from "@durablekit/compose";
import { ChunkLog, type ChunkProducer } from "./chunk-log";
import {
  type ChunkBody,
  DEFAULT_MAX_CHUNK_BYTES,
  decodeChunk,
  encodeChunk,
  encodingFor,
} from "./codec";
import { EntryCache, type LiveEntry, type ProducerMemory } from "./entry-cache";
import {
  ProducerFencedError,
  ProducerSequenceError,
  StreamClosedError,
  StreamLiveError,
  StreamNotFoundError,
  StreamsArgumentError,
  StreamsError,
  WriterSeqRegressionError,
} from "./errors";
import { EventSink } from "./events";
import {
  assertStreamId,
  assertTag,
  check,
  checkConfig,
  DEFAULT_CONTENT_TYPE,
  readCount,
  readFrom,
  readMetadata,
  readObject,
  readOpenOptions,
  readTime,
} from "./options";
import {
  assertCounter,
  assertProducer,
  assertWriterSeq,
  judgeProducerFence,
  judgeProducerWrite,
  nextProducerSeq,
} from "./producer";
import { migrateStreamsSchema } from "./schema";
import { type StreamHead, type StreamRow, StreamStore } from "./store";
import type {
  StreamChunk,
  StreamDeleteOptions,
  StreamEncoding,
  StreamGoneReason,
  StreamImportChunk,
  StreamImportOptions,
  StreamJson,
  StreamList,
  StreamListOptions,
  StreamOpenOptions,
  StreamPage,
  StreamReadBatchesOptions,
  StreamReadOptions,
  StreamReadPageOptions,
  StreamState,
  StreamStatus,
  StreamsOptions,
  StreamValue,
  StreamWriteOptions,
  StreamWriteResult,
  StreamWriter,
} from "./types";
import { WaitRegistry } from "./wait-registry";
import { type EntryHolder, type WritePath, type WriteRequest, Writer } from "./writer";

/** One try of a write: done, or storage was not where memory thought and the write is judged again. */
type WriteAttempt = { kind: "done"; result: StreamWriteResult } | { kind: "retry" };
const RETRY: WriteAttempt = { kind: "retry" };

/** What the transaction of a multi-chunk or settling write found and did. */
type TransactionOutcome =
  /** The chunks (and settlement) committed; `producer` is the producer columns they carry. */
  | { kind: "written"; producer: ChunkProducer | null }
  /** The stream row is gone (deleted or expired and swept). */
  | { kind: "gone" }
  /** The stream has expired (its TTL or `expiresAt` passed) and the sweep has not deleted it yet. */
  | { kind: "expired" }
  /** The stream already settled as `state`. */
  | { kind: "settled"; state: "completed" | "errored" }
  /** The chunk log's tail is not at the entry's cursor (or moved during the inserts): try again. */
  | { kind: "moved" };

const GONE: TransactionOutcome = { kind: "gone" };
const EXPIRED: TransactionOutcome = { kind: "expired" };
const MOVED: TransactionOutcome = { kind: "moved" };

/** What a write's producer comes to, once judged (see `Streams#judgeProducer`). */
type ProducerJudgement =
  /** The write names no producer. */
  | { kind: "none" }
  /** A producer that only fences older epochs (a settle without a seq); it writes no tuple. */
  | { kind: "fence-only"; memory: ProducerMemory }
  /** A producer write to make, with the `(epoch, seq)` its chunks carry. */
  | { kind: "write"; memory: ProducerMemory; tuple: { epoch: number; seq: number } }
  /** A retry of a write already made: its result, or null when memory cannot answer it. */
  | { kind: "duplicate"; result: StreamWriteResult | null };
const NO_PRODUCER: ProducerJudgement = { kind: "none" };

/** A write once judged: what its commit and the bookkeeping after it both read. */
interface JudgedWrite {
  entry: LiveEntry;
  request: WriteRequest;
  /** The producer's memory (absent without a producer). */
  memory: ProducerMemory | undefined;
  /** The `(epoch, seq)` the chunks carry, or null. */
  tuple: { epoch: number; seq: number } | null;
  now: number;
  /** When a settling write's stream expires, or null. */
  settledWake: number | null;
}

/** Thrown inside a write transaction to roll it back when storage is not where memory thought. */
class StaleCursor extends Error {}

/** The stream a read resolved to when it started. Reads follow the key, not the id. */
interface ReadTarget {
  key: number;
  streamId: string;
  encoding: StreamEncoding;
}

/** The retention columns of a stream row. */
interface RetentionFields {
  state: StreamState;
  ttl_ms: number | null;
  settled_ttl_ms: number | null;
  expires_at: number | null;
  touched_at: number;
}

/** The sliding time to live that applies to a stream in its state: `settled_ttl_ms` once settled, if set. */
function ttlOf(row: RetentionFields): number | null {
  return row.state !== "streaming" && row.settled_ttl_ms !== null ? row.settled_ttl_ms : row.ttl_ms;
}

/**
 * When a stream expires: its time to live ({@link ttlOf}) after its last activity (the later of
 * the row's `touched_at` and the newest chunk's time), capped by the absolute `expires_at`; null
 * when it never expires. `lastAppendAt` is null when the caller does not know it, which yields the
 * lower bound stored in `wake_at` (appends only ever move the true expiry later).
 */
function expiryOf(row: RetentionFields, lastAppendAt: number | null): number | null {
  let at: number | null = null;
  const ttl = ttlOf(row);
  if (ttl !== null) at = Math.max(row.touched_at, lastAppendAt ?? 0) + ttl;
  if (row.expires_at !== null) at = at === null ? row.expires_at : Math.min(at, row.expires_at);
  return at;
}

/** True when a stream with this expiry is gone at `now`. */
function isExpired(expiry: number | null, now: number): boolean {
  return expiry !== null && expiry <= now;
}

/** The error an aborted read throws: the signal's reason. */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The read was aborted.", "AbortError");
}

function decodeRows(encoding: StreamEncoding, rows: [number, SqlStorageValue][]): StreamChunk[] {
  const chunks: StreamChunk[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index] as [number, SqlStorageValue];
    chunks[index] = { seq: row[0], chunk: decodeChunk(encoding, row[1]) };
  }
  return chunks;
}

/** Rows as stored: text as is, a binary body as bytes. */
function storedRows(encoding: StreamEncoding, rows: [number, SqlStorageValue][]): StreamChunk[] {
  const chunks: StreamChunk[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index] as [number, SqlStorageValue];
    chunks[index] = {
      seq: row[0],
      chunk: encoding === "binary" ? decodeChunk(encoding, row[1]) : row[1],
    };
  }
  return chunks;
}

/** The result of a settle that found nothing to do (the stream settled or went away before). */
function nothingWritten(cursor: number, state: StreamState): StreamWriteResult {
  return { firstSeq: null, lastSeq: null, cursor, duplicate: false, settled: false, state };
}

function hasTuple(request: WriteRequest): boolean {
  return request.producer !== undefined && request.producer.seq !== "fence-only";
}

/**
 * Durable, ordered chunk logs in a Durable Object's SQLite: one per stream id, with a gapless
 * monotonic cursor, replay-then-tail reads that do not depend on the producer, producer fencing
 * and sliding-TTL retention.
 *
 * Construct one per object (`new Streams(this.ctx)`); it owns the `dk_streams_*` tables, created
 * in the constructor. Every method is synchronous except the read generators and {@link alarm}.
 * It is an {@link AlarmPart}: share the object's alarm through `Alarms` from `@durablekit/compose`;
 * a stream gaining an earlier expiry asks for its wake itself (earlier-only). Live readers are
 * woken in-isolate, so use one instance per object.
 */
export class Streams implements AlarmPart {
  readonly #ctx: DurableObjectState;
  readonly #maxChunkBytes: number;
  readonly #maxSweepStreams: number;
  readonly #now: () => number;
  readonly #store: StreamStore;
  readonly #chunks: ChunkLog;
  readonly #entries: EntryCache;
  readonly #waits = new WaitRegistry();
  /** Why recently purged streams (by key) went away, for readers that find them gone; bounded. */
  readonly #purged = new Map<number, StreamGoneReason>();
  readonly #events: EventSink;
  /** The write path as its writers see it (see {@link WritePath}). */
  readonly #path: WritePath = {
    appendOne: (holder, body) => this.#appendOne(holder, body),
    write: (holder, request) => this.#write(holder, request),
  };

  // ── Construction ──

  /**
   * Creates (or checks) the `dk_streams_*` tables of the object.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed `ctx` or option.
   * @throws {StreamsSchemaError} `streams/schema-too-new` when the tables were written by a newer version.
   * @throws {StreamsError} `streams/conflict` when the object already has a Streams: construct parts once, in the constructor.
   */
  constructor(ctx: DurableObjectState, options: StreamsOptions = {}) {
    check.ctx(ctx, "new Streams(ctx)");
    check.options(options, "Streams options");
    this.#maxChunkBytes = check.count(
      options.maxChunkBytes,
      "maxChunkBytes",
      DEFAULT_MAX_CHUNK_BYTES,
    );
    this.#maxSweepStreams = check.count(options.maxSweepStreams, "maxSweepStreams", 500);
    check.callback(options.now, "now");
    check.callback(options.onEvent, "onEvent");
    this.#ctx = ctx;
    this.#now = options.now ?? Date.now;
    this.#store = new StreamStore(ctx.storage);
    this.#chunks = new ChunkLog(ctx.storage.sql);
    this.#entries = new EntryCache(this.#store, this.#chunks);
    this.#events = new EventSink(options.onEvent);
    migrateStreamsSchema(ctx.storage);
    claimPart(ctx, {
      part: "Streams",
      construct: "this.streams = new Streams(ctx)",
      breaks:
        "keeps its own live readers and caches: an append through one never wakes the other's readers",
      conflict: (message) => new StreamsError("streams/conflict", message),
    });
  }

  // ── Lifecycle: open, delete, touch ──

  /**
   * Opens a stream for writing, creating it if needed. Idempotent on the id: a live stream returns a
   * writer at its cursor; an expired one is replaced by a new stream; a settled one returns a writer
   * at its final cursor, so a replayed handler that opens it again goes on (read its state with
   * {@link status}): every append through that writer is refused as `streams/closed`, and `close`
   * or `error` are no-ops. With `producer`, a replayed producer's earlier writes are answered as
   * duplicates (exactly once across replays).
   * @throws {StreamConfigConflictError} `streams/conflict` when a given option differs from the live stream's.
   * @throws {ProducerFencedError} `streams/fenced` when `producer.epoch` is older than the stream has seen.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id or option.
   */
  open(streamId: string, options: StreamOpenOptions = {}): StreamWriter {
    assertStreamId(streamId);
    readObject(options, "open() options", streamId);
    const config = readOpenOptions(streamId, options);
    const store = this.#store;
    const now = this.#now();
    let row = store.byId(streamId);
    let replaced: StreamRow | null = null;
    if (row !== null && this.#expiredAt(row, now)) {
      replaced = row;
      row = null;
    }
    if (row !== null) {
      // Idempotent on the id, also once settled: a replayed handler or producer gets a writer; its
      // retries are answered as duplicates and anything new is refused as closed.
      checkConfig(row, options, config);
      const entry = this.#entries.entryFor(row);
      if (options.producer !== undefined) {
        // Fence a stale producer at open; every write checks again.
        const { id, epoch } = options.producer;
        const current = this.#fence(entry, id, epoch).state?.epoch ?? null;
        // A newer epoch fences the older ones from now, not from its first write: a zombie of an
        // older epoch can neither append nor settle once this open returned. Epoch 0 of a producer
        // the stream has not seen fences nothing, so it writes nothing.
        if (row.state === "streaming" && epoch > (current ?? 0)) {
          this.#entries.recordEpoch(entry, id, epoch);
        }
      }
      return new Writer(this.#path, entry, false, options.producer, this.#maxChunkBytes);
    }

    const encoding = options.encoding ?? encodingFor(options.contentType ?? "application/json");
    const contentType = options.contentType ?? DEFAULT_CONTENT_TYPE[encoding];
    const wakeAt = expiryOf(
      {
        state: "streaming",
        ttl_ms: config.ttlMs,
        settled_ttl_ms: config.settledTtlMs,
        expires_at: config.expiresAt,
        touched_at: now,
      },
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
      settled_ttl_ms: config.settledTtlMs,
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
        settledTtlMs: fresh.settled_ttl_ms,
        expiresAt: fresh.expires_at,
        now,
        wakeAt,
      });
    });
    this.#afterCreate(streamId, fresh.tag, wakeAt, replaced);
    return new Writer(
      this.#path,
      this.#entries.entryFor(fresh),
      true,
      options.producer,
      this.#maxChunkBytes,
    );
  }

  /**
   * Deletes a stream, its chunks and its producer state. A live stream is refused unless `force`;
   * readers tailing it are woken and end.
   * @returns true when a stream was deleted, false when none exists.
   * @throws {StreamLiveError} `streams/delete-live` for a live stream without `force`.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id or option.
   */
  delete(streamId: string, options: StreamDeleteOptions = {}): boolean {
    assertStreamId(streamId);
    readObject(options, "delete() options", streamId);
    const store = this.#store;
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
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id.
   */
  touch(streamId: string): boolean {
    assertStreamId(streamId);
    const row = this.#store.headById(streamId);
    const now = this.#now();
    if (row === null || this.#expiredAt(row, now)) return false;
    if (ttlOf(row) !== null) {
      // Touching only moves the expiry later, so the wake asked for earlier still comes first.
      this.#store.touch(row.stream_key, now, expiryOf({ ...row, touched_at: now }, null));
    }
    return true;
  }

  /**
   * Replaces a stream's metadata, in any state — what a host calls when a turn has ended and it
   * learns what to remember with it (one row written; the stream's retention is not touched).
   * `null` removes the metadata.
   * @returns false when the stream does not exist (or has expired).
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id or metadata that is not a JSON object.
   */
  setMetadata(streamId: string, metadata: Record<string, StreamJson> | null): boolean {
    assertStreamId(streamId);
    if (metadata === undefined) {
      throw new StreamsArgumentError("setMetadata() takes a JSON object, or null.", streamId);
    }
    const stored = metadata === null ? null : readMetadata(metadata, streamId);
    const row = this.#store.headById(streamId);
    if (row === null || this.#expiredAt(row, this.#now())) return false;
    this.#store.setMetadata(row.stream_key, stored);
    return true;
  }

  /**
   * Recreates a stream written elsewhere — an older table, another store — keeping what it was:
   * its chunks (seq 0, 1, … in order) with their own write times, its creation and last-activity
   * times, its final state, cursor and error. Everything is written in one transaction (the stream
   * row, one row per chunk, the row's final columns), so a crash leaves either the whole stream or
   * none of it. An imported `streaming` stream is a live one: `open` returns a writer at its cursor,
   * and its sliding TTL runs from its newest chunk. An id that exists is left alone (an expired one
   * is replaced), so a migration that is run again imports nothing twice.
   * @returns true when the stream was imported, false when a live stream with this id exists.
   * @throws {StreamSerializationError} `streams/unserializable` for a chunk or metadata JSON cannot hold.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id, option, chunk list or time, or a chunk over `maxChunkBytes`.
   */
  importStream(streamId: string, options: StreamImportOptions = {}): boolean {
    assertStreamId(streamId);
    readObject(options, "importStream() options", streamId);
    const state = options.state ?? "streaming";
    if (state !== "streaming" && state !== "completed" && state !== "errored") {
      throw new StreamsArgumentError(
        `importStream() state must be "streaming", "completed" or "errored"; got ${JSON.stringify(state)}.`,
        streamId,
      );
    }
    if (options.error !== undefined && typeof options.error !== "string") {
      throw new StreamsArgumentError("importStream() error must be a string.", streamId);
    }
    const config = readOpenOptions(streamId, {
      tag: options.tag,
      metadata: options.metadata,
      contentType: options.contentType,
      encoding: options.encoding,
      ttlMs: options.ttlMs,
      settledTtlMs: options.settledTtlMs,
      expiresAt: options.expiresAt,
    });
    const encoding = options.encoding ?? encodingFor(options.contentType ?? "application/json");
    const contentType = options.contentType ?? DEFAULT_CONTENT_TYPE[encoding];
    const given = options.chunks ?? [];
    if (!Array.isArray(given)) {
      throw new StreamsArgumentError("importStream() chunks must be an array.", streamId);
    }
    const bodies: ChunkBody[] = [];
    const times: number[] = [];
    for (const item of given as readonly StreamImportChunk[]) {
      readObject(item, "An imported chunk", streamId);
      const at = item?.at;
      if (typeof at !== "number" || !Number.isFinite(at) || at < (times[times.length - 1] ?? at)) {
        throw new StreamsArgumentError(
          "Each imported chunk needs `at`: epoch milliseconds, not earlier than the previous chunk's.",
          streamId,
        );
      }
      bodies.push(encodeChunk(encoding, item.chunk, this.#maxChunkBytes, streamId));
      times.push(at);
    }
    const now = this.#now();
    const lastAt = times[times.length - 1] ?? null;
    const createdAt = readTime("createdAt", options.createdAt, times[0] ?? now, streamId);
    // A settled stream settled after its last chunk; its settlement is its last activity.
    const updatedAt = Math.max(
      readTime("updatedAt", options.updatedAt, lastAt ?? createdAt, streamId),
      state === "streaming" ? createdAt : (lastAt ?? createdAt),
    );
    const settled = state !== "streaming";
    const wakeAt = expiryOf(
      {
        state,
        ttl_ms: config.ttlMs,
        settled_ttl_ms: config.settledTtlMs,
        expires_at: config.expiresAt,
        touched_at: updatedAt,
      },
      settled ? null : lastAt,
    );

    const store = this.#store;
    const existing = store.byId(streamId);
    if (existing !== null && !this.#expiredAt(existing, now)) return false;
    store.transaction(() => {
      if (existing !== null) store.deleteStream(existing.stream_key);
      // Created without retention, so the fence trigger (which judges expiry at each chunk's own
      // time) accepts every chunk; the retention columns are set by the last statement.
      const key = store.insertStream({
        streamId,
        contentType,
        encoding,
        tag: options.tag ?? null,
        metadata: config.metadata,
        ttlMs: null,
        settledTtlMs: null,
        expiresAt: null,
        now: createdAt,
        wakeAt: null,
      });
      for (let seq = 0; seq < bodies.length; seq++) {
        const written = this.#chunks.appendFenced(
          key,
          seq,
          times[seq] as number,
          bodies[seq] as ChunkBody,
          null,
          null,
        );
        // Only reachable if the fence refused a chunk of a row this transaction just created.
        if (written !== 1) {
          throw new StreamsError("streams/storage", `Importing stream "${streamId}" failed.`, {
            streamId,
          });
        }
      }
      store.finishImport(key, {
        state,
        error: state === "errored" ? (options.error ?? null) : null,
        ttlMs: config.ttlMs,
        settledTtlMs: config.settledTtlMs,
        expiresAt: config.expiresAt,
        touchedAt: updatedAt,
        closedAt: settled ? updatedAt : null,
        finalCursor: settled ? bodies.length : null,
        wakeAt,
      });
    });
    this.#afterCreate(streamId, options.tag ?? null, wakeAt, existing);
    return true;
  }

  /** After a new stream row committed (replacing an expired one): forget, report, ask for its wake. */
  #afterCreate(
    streamId: string,
    tag: string | null,
    wakeAt: number | null,
    replaced: StreamRow | null,
  ): void {
    if (replaced !== null) this.#afterPurge(replaced, "expired");
    // A rolled-back host transaction can leave an entry cached for an id (even a key) that storage
    // never kept; a new stream always starts from a new entry.
    this.#entries.forget(streamId);
    this.#events.emit({ type: "stream:opened", streamId, ...(tag !== null ? { tag } : {}) });
    // The new row's wake_at may be earlier than any wake this object has asked for.
    if (wakeAt !== null) this.#requestWake(wakeAt);
  }

  /** After a stream's rows are gone: forget it, end its readers, report it. */
  #afterPurge(row: StreamRow, why: "deleted" | "forced" | "expired"): void {
    this.#entries.forget(row.stream_id, row.stream_key);
    // Keys are never reused, so a reason can never be read for another stream; the oldest go first.
    this.#purged.set(row.stream_key, why === "expired" ? "expired" : "deleted");
    if (this.#purged.size > 1024) this.#purged.delete(this.#purged.keys().next().value as number);
    this.#waits.wake(row.stream_key, true);
    this.#events.emit(
      why === "expired"
        ? { type: "stream:expired", streamId: row.stream_id }
        : { type: "stream:deleted", streamId: row.stream_id, forced: why === "forced" },
    );
  }

  // ── Write path ──

  /**
   * One write to an existing stream without a writer: the form a protocol handler uses per request.
   * `producer` carries the whole `(id, epoch, seq)`; `settle` settles the stream after the chunks, in
   * the same transaction. A bare settle of a settled stream is a no-op; a producer retry of a write
   * that settled the stream is reported as a duplicate.
   * @throws {StreamNotFoundError} `streams/not-found` when the stream does not exist.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id, chunk list or option.
   * @throws as {@link StreamWriter.append}.
   */
  write(
    streamId: string,
    chunks: readonly StreamValue[],
    options: StreamWriteOptions = {},
  ): StreamWriteResult {
    assertStreamId(streamId);
    if (!Array.isArray(chunks)) {
      throw new StreamsArgumentError("write() takes an array of chunks.", streamId);
    }
    readObject(options, "write() options", streamId);
    const row = this.#liveRow(streamId);
    const holder: EntryHolder = { entry: this.#entries.entryFor(row) };
    const request: WriteRequest = {
      bodies: chunks.map((chunk) =>
        encodeChunk(row.encoding, chunk, this.#maxChunkBytes, streamId),
      ),
    };
    if (options.producer !== undefined) {
      readObject(options.producer, "producer", streamId);
      assertProducer(options.producer, streamId);
      assertCounter(options.producer.seq, "producer seq", streamId);
      request.producer = { ...options.producer };
    }
    if (options.writerSeq !== undefined) {
      assertWriterSeq(options.writerSeq, streamId);
      request.writerSeq = options.writerSeq;
    }
    if (options.settle !== undefined) {
      if (options.settle !== true) readObject(options.settle, "settle", streamId);
      request.settle =
        options.settle === true
          ? { state: "completed", reason: null }
          : { state: "errored", reason: options.settle.error ?? null };
    }
    return this.#write(holder, request);
  }

  /** {@link WritePath.appendOne}: one fenced statement, no allocations beyond the chunk body. */
  #appendOne(holder: EntryHolder, body: ChunkBody): number {
    const entry = holder.entry;
    if (!entry.stale) {
      const seq = entry.cursor;
      const now = this.#now();
      // The fence trigger writes the row only at the tail of a streaming stream, so 1 row written
      // means seq was the tail and the stream was streaming: the entry is coherent again.
      if (this.#chunks.appendFenced(entry.key, seq, now, body, null, null) === 1) {
        entry.cursor = seq + 1;
        entry.lastAppendAt = now;
        this.#events.appended(entry.key, entry.streamId, seq, seq);
        this.#waits.wake(entry.key, false);
        return seq;
      }
    }
    // A stale entry, a settled or deleted stream, a cursor mismatch: the full write sorts it out.
    return this.#write(holder, { bodies: [body] }).firstSeq as number;
  }

  /**
   * {@link WritePath.write}: producer judgement, writer-seq check, the fenced insert(s) and the
   * optional settlement, then wakes readers and reports events. Retries on a stale entry.
   */
  #write(holder: EntryHolder, request: WriteRequest): StreamWriteResult {
    if (request.bodies.length === 0 && request.settle === undefined) {
      throw new StreamsArgumentError(
        "A write needs at least one chunk (or a settle); an empty append means nothing.",
        holder.entry.streamId,
      );
    }
    for (let attempt = 0; attempt < 4; attempt++) {
      if (holder.entry.stale) {
        const row = this.#store.byKey(holder.entry.key);
        if (row === null) return this.#gone(holder.entry, request);
        holder.entry = this.#entries.entryFor(row);
      }
      const outcome = this.#attempt(holder.entry, request, attempt > 0);
      if (outcome.kind === "done") return outcome.result;
      holder.entry.stale = true;
    }
    // Only reachable if storage changes under every attempt, which one isolate cannot cause.
    throw new StreamsError(
      "streams/storage",
      `Stream "${holder.entry.streamId}" kept changing during a write; retry it.`,
      { streamId: holder.entry.streamId },
    );
  }

  #attempt(entry: LiveEntry, request: WriteRequest, fresh: boolean): WriteAttempt {
    const now = this.#now();
    const judged = this.#judgeProducer(entry, request);
    if (judged.kind === "duplicate") {
      return judged.result === null ? RETRY : { kind: "done", result: judged.result };
    }
    this.#checkWriterSeq(entry, request);
    const memory = judged.kind === "none" ? undefined : judged.memory;
    const tuple = judged.kind === "write" ? judged.tuple : null;
    const settle = request.settle;
    const settledWake =
      settle === undefined
        ? null
        : expiryOf(
            {
              state: settle.state,
              ttl_ms: entry.ttlMs,
              settled_ttl_ms: entry.settledTtlMs,
              expires_at: entry.expiresAt,
              touched_at: now,
            },
            null,
          );
    const write: JudgedWrite = { entry, request, memory, tuple, now, settledWake };
    const commit = this.#commit(write, fresh);
    if (commit.kind !== "written") return commit;
    if (memory !== undefined && commit.producer !== null) memory.no = commit.producer.no;
    return this.#committed(write);
  }

  /** A writer's `writerSeq` must grow: one at or below the last one written is refused. */
  #checkWriterSeq(entry: LiveEntry, request: WriteRequest): void {
    if (request.writerSeq === undefined) return;
    if (entry.writerSeq === undefined) entry.writerSeq = this.#chunks.lastWriterSeq(entry.key);
    const last = entry.writerSeq;
    if (last !== null && !(request.writerSeq > last)) {
      throw new WriterSeqRegressionError(entry.streamId, last, request.writerSeq);
    }
  }

  /**
   * Writes the chunks (and the settlement) at the entry's cursor, fenced on storage: one statement
   * for one chunk, else one transaction. `written` with the producer columns the chunks carry, or
   * what the write met instead (retry, or done for a stream that is gone).
   */
  #commit(
    write: JudgedWrite,
    fresh: boolean,
  ): WriteAttempt | { kind: "written"; producer: ChunkProducer | null } {
    const { entry, request, memory, tuple, now, settledWake } = write;
    const store = this.#store;
    const chunks = this.#chunks;
    const { bodies, settle } = request;
    const count = bodies.length;
    const first = entry.cursor;
    const writerSeq = request.writerSeq ?? null;
    if (count === 1 && settle === undefined && (tuple === null || memory?.no != null)) {
      // Hot path: one statement, one row (see ChunkLog.appendFenced).
      const written = tuple === null ? null : { no: memory?.no as number, ...tuple };
      if (
        chunks.appendFenced(entry.key, first, now, bodies[0] as ChunkBody, written, writerSeq) === 0
      ) {
        const state = this.#stateAt(entry.key, now);
        if (state === null) return { kind: "done", result: this.#gone(entry, request) };
        if (state === "expired") throw this.#expired(entry);
        if (state !== "streaming" && fresh) throw this.#closed(entry, state);
        return RETRY;
      }
      return { kind: "written", producer: written };
    }
    const outcome = this.#transaction((): TransactionOutcome => {
      const state = this.#stateAt(entry.key, now);
      if (state === null) return GONE;
      // Nothing is written to an expired stream, a settle included: it would revive it.
      if (state === "expired") return EXPIRED;
      if (state !== "streaming") return { kind: "settled", state };
      if ((chunks.tail(entry.key)?.seq ?? -1) + 1 !== first) return MOVED;
      let producer: ChunkProducer | null = null;
      if (tuple !== null && memory !== undefined && request.producer !== undefined) {
        const no = memory.no ?? store.registerProducer(entry.key, request.producer.id, first);
        producer = { no, ...tuple };
      }
      for (let index = 0; index < count; index++) {
        const last = index === count - 1;
        const body = bodies[index] as ChunkBody;
        const seq = first + index;
        if (
          chunks.insertChunk(entry.key, seq, now, body, producer, last ? writerSeq : null) !== 1
        ) {
          // Undo this transaction's inserts; the retry starts from storage.
          throw new StaleCursor();
        }
      }
      if (settle !== undefined) {
        store.settle(entry.key, {
          state: settle.state,
          error: settle.reason,
          now,
          finalCursor: first + count,
          closer: producer,
          wakeAt: settledWake,
        });
      }
      return { kind: "written", producer };
    });
    switch (outcome.kind) {
      case "moved":
        return RETRY;
      case "gone":
        return { kind: "done", result: this.#gone(entry, request) };
      case "expired":
        throw this.#expired(entry);
      case "settled":
        // A bare settle of a settled stream is the documented no-op; anything else is judged
        // again from storage (the producer may be retrying a write that settled it) before it
        // is refused.
        if (count === 0 && tuple === null) {
          return { kind: "done", result: this.#alreadySettled(entry, outcome.state) };
        }
        if (!fresh) return RETRY;
        throw this.#closed(entry, outcome.state);
      case "written":
        return outcome;
    }
  }

  /** After the commit: the entry's memory, events, wakes and readers brought up to date; the result. */
  #committed(write: JudgedWrite): WriteAttempt {
    const { entry, request, memory, tuple, now, settledWake } = write;
    const { bodies, settle } = request;
    const count = bodies.length;
    const first = entry.cursor;
    // Committed: the entry's cursor is the chunk log's tail + 1 again.
    entry.cursor = first + count;
    if (count > 0) entry.lastAppendAt = now;
    if (memory !== undefined && tuple !== null) memory.state = { ...tuple };
    if (count > 0 && request.writerSeq !== undefined) entry.writerSeq = request.writerSeq;
    if (count > 0) this.#events.appended(entry.key, entry.streamId, first, first + count - 1);
    if (settle !== undefined) {
      this.#entries.forget(entry.streamId, entry.key);
      this.#events.emit(
        settle.state === "completed"
          ? { type: "stream:closed", streamId: entry.streamId, cursor: first + count }
          : {
              type: "stream:errored",
              streamId: entry.streamId,
              cursor: first + count,
              ...(settle.reason !== null ? { reason: settle.reason } : {}),
            },
      );
      // A settled stream's expiry restarts from now: it may be earlier than any wake asked for.
      if (settledWake !== null) this.#requestWake(settledWake);
    }
    this.#waits.wake(entry.key, settle !== undefined);
    return {
      kind: "done",
      result: {
        firstSeq: count > 0 ? first : null,
        lastSeq: count > 0 ? first + count - 1 : null,
        cursor: first + count,
        duplicate: false,
        settled: settle !== undefined,
        state: settle?.state ?? "streaming",
        ...(request.producer !== undefined && memory?.state
          ? { producer: { id: request.producer.id, ...memory.state } }
          : {}),
      },
    };
  }

  // ── Producers ──────────────────────────────────────────────────────────────

  /**
   * The producer's memory, once its `epoch` has passed the fence: an epoch older than the one the
   * stream has seen is refused (`streams/fenced`). The one place that rule is applied, for `open`,
   * a fence-only write and every producer write.
   */
  #fence(entry: LiveEntry, id: string, epoch: number): ProducerMemory {
    const memory = this.#entries.producer(entry, id);
    const fence = judgeProducerFence(memory.state, epoch);
    if (fence.kind === "fenced") {
      throw new ProducerFencedError(entry.streamId, id, fence.currentEpoch, epoch);
    }
    return memory;
  }

  /**
   * Judges a write's producer `(id, epoch, seq)` against what the stream holds for it: no
   * producer, a fence-only write, a write to make with its tuple, or a duplicate answered from
   * memory (null when memory cannot answer it: judged again from storage). A write the rules
   * refuse throws: `streams/fenced`, `streams/producer-seq-gap`, `streams/producer-epoch-seq`.
   */
  #judgeProducer(entry: LiveEntry, request: WriteRequest): ProducerJudgement {
    if (request.producer === undefined) return NO_PRODUCER;
    const { id, epoch, seq: requested } = request.producer;
    const memory = this.#fence(entry, id, epoch);
    if (requested === "fence-only") return { kind: "fence-only", memory };
    const seq = requested === "auto" ? nextProducerSeq(memory.state, epoch) : requested;
    const verdict = judgeProducerWrite(memory.state, epoch, seq);
    switch (verdict.kind) {
      case "accept":
        return { kind: "write", memory, tuple: { epoch, seq } };
      case "duplicate":
        return {
          kind: "duplicate",
          result: this.#entries.duplicateOf(entry, id, memory, epoch, seq),
        };
      case "fenced":
        throw new ProducerFencedError(entry.streamId, id, verdict.currentEpoch, epoch);
      case "gap":
        throw new ProducerSequenceError(
          "streams/producer-seq-gap",
          entry.streamId,
          id,
          verdict.expected,
          seq,
        );
      case "epoch-seq":
        throw new ProducerSequenceError("streams/producer-epoch-seq", entry.streamId, id, 0, seq);
    }
  }

  /** `store.transaction`, turning a {@link StaleCursor} thrown inside (after its rollback) into `moved`. */
  #transaction(fn: () => TransactionOutcome): TransactionOutcome {
    try {
      return this.#store.transaction(fn);
    } catch (error) {
      if (error instanceof StaleCursor) return MOVED;
      throw error;
    }
  }

  /** A write reached a deleted stream: a bare settle is a no-op, anything else is refused. */
  #gone(entry: LiveEntry, request: WriteRequest): StreamWriteResult {
    this.#entries.forget(entry.streamId, entry.key);
    entry.stale = true;
    this.#waits.wake(entry.key, true);
    if (request.bodies.length === 0 && request.settle !== undefined && !hasTuple(request)) {
      return nothingWritten(entry.cursor, request.settle.state);
    }
    throw new StreamClosedError(entry.streamId, "deleted");
  }

  /**
   * A stream's state as a write judges it at `now` from storage: null when the row is gone,
   * `"expired"` when it is streaming past its expiry (the fence trigger refuses its chunks).
   */
  #stateAt(key: number, now: number): StreamState | "expired" | null {
    const row = this.#store.byKey(key);
    if (row === null) return null;
    if (row.state === "streaming" && this.#expiredAt(row, now)) return "expired";
    return row.state;
  }

  /** A write reached an expired stream: refused, and the isolate forgets it (the sweep deletes it). */
  #expired(entry: LiveEntry): StreamClosedError {
    this.#entries.forget(entry.streamId, entry.key);
    entry.stale = true;
    return new StreamClosedError(entry.streamId, "expired");
  }

  #alreadySettled(entry: LiveEntry, state: StreamState): StreamWriteResult {
    this.#waits.wake(entry.key, true);
    return nothingWritten(entry.cursor, state);
  }

  #closed(entry: LiveEntry, state: StreamState): StreamClosedError {
    this.#waits.wake(entry.key, true);
    return new StreamClosedError(
      entry.streamId,
      state === "errored" ? "errored" : "completed",
      entry.cursor,
    );
  }

  // ── Reads ──

  /**
   * Replays a stream from `from` (inclusive), then tails live appends; ends when the stream is
   * settled and every chunk has been yielded, or quietly when it is deleted.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed `from` (at the call) or id (at the first iteration).
   * @throws {StreamNotFoundError} `streams/not-found` (at the first iteration) when the stream does not exist.
   * @throws the signal's reason when `signal` aborts.
   */
  read<T = unknown>(
    streamId: string,
    options: StreamReadOptions = {},
  ): AsyncGenerator<StreamChunk<T>, void, undefined> {
    readObject(options, "read() options");
    return this.#chunksOf(streamId, readFrom(options.from), options.signal) as AsyncGenerator<
      StreamChunk<T>,
      void,
      undefined
    >;
  }

  /**
   * {@link read} in non-empty arrays: replay in slices of `batchSize`; each live wakeup yields
   * everything new as one array. `onUpToDate` fires once, when the reader first reaches the tail.
   * @throws as {@link read}, and `streams/invalid-argument` for a malformed `batchSize`.
   */
  readBatches<T = unknown>(
    streamId: string,
    options: StreamReadBatchesOptions = {},
  ): AsyncGenerator<StreamChunk<T>[], void, undefined> {
    readObject(options, "readBatches() options");
    return this.#batches(
      streamId,
      readFrom(options.from),
      readCount("batchSize", options.batchSize, 100),
      options.signal,
      options.onUpToDate,
      options.onGone,
    ) as AsyncGenerator<StreamChunk<T>[], void, undefined>;
  }

  /**
   * Reads up to `limit` chunks from `from` synchronously, with the cursor and state at that moment:
   * a catch-up read that never waits. With `decode: false` each chunk is given as stored (JSON
   * text, text or bytes), for a reader that forwards it without parsing it.
   * @throws {StreamNotFoundError} `streams/not-found`.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id, `from`, `limit` or `decode`.
   */
  readPage<T = unknown>(streamId: string, options: StreamReadPageOptions = {}): StreamPage<T> {
    assertStreamId(streamId);
    readObject(options, "readPage() options", streamId);
    const from = readFrom(options.from);
    const limit = readCount("limit", options.limit, 100);
    if (options.decode !== undefined && typeof options.decode !== "boolean") {
      throw new StreamsArgumentError("readPage() decode must be a boolean.", streamId);
    }
    const row = this.#liveRow(streamId);
    // Cursor, state and page are read in one synchronous block: they agree.
    const cursor = this.#cursorOf(row);
    const rows = this.#chunks.page(row.stream_key, from, limit);
    const chunks =
      options.decode === false ? storedRows(row.encoding, rows) : decodeRows(row.encoding, rows);
    const last = chunks[chunks.length - 1];
    const next = last === undefined ? from : last.seq + 1;
    return { chunks, cursor, next, upToDate: next >= cursor, state: row.state } as StreamPage<T>;
  }

  /** How many readers are parked on live tails in this isolate, over how many streams. */
  waitStats(): { streams: number; readers: number } {
    return this.#waits.stats();
  }

  /** {@link read}: {@link #batches}, one chunk at a time. */
  async *#chunksOf(
    streamId: string,
    from: number,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    for await (const batch of this.#batches(streamId, from, 256, signal, undefined, undefined)) {
      for (const chunk of batch) {
        if (signal?.aborted) throw abortReason(signal);
        yield chunk;
      }
    }
  }

  /**
   * Replay-then-tail in batches. Each loop reads one page; a short page means the reader is at the
   * durable tail, where it reports `onUpToDate` once, ends when the stream settled (and is drained)
   * or vanished, and otherwise parks until the next append, settle or delete of the stream wakes it.
   * It parks only when no wake happened since its page read (appends made while the consumer held a
   * batch woke no one), and it reads the state only after an ending wake. The stream is resolved at
   * the first iteration, so a missing stream rejects the first `next()`.
   */
  async *#batches(
    streamId: string,
    from: number,
    batchSize: number,
    signal: AbortSignal | undefined,
    onUpToDate: (() => void) | undefined,
    onGone: ((reason: StreamGoneReason) => void) | undefined,
  ): AsyncGenerator<StreamChunk[], void, undefined> {
    const { key, encoding } = this.#readTarget(streamId, signal);
    const store = this.#store;
    const chunks = this.#chunks;
    const waits = this.#waits;
    let next = from;
    let reachedTail = false;
    // The `endings` count at which the stream was last seen streaming (-1: not yet looked).
    let streamingAt = -1;
    let waiter: (() => void) | null = null;
    // One abort listener for the whole read, not one per park.
    const onAbort = () => waiter?.();
    signal?.addEventListener("abort", onAbort);
    try {
      for (;;) {
        if (signal?.aborted) throw abortReason(signal);
        const seen = waits.version;
        const rows = chunks.page(key, next, batchSize);
        if (rows.length > 0) {
          next = (rows[rows.length - 1] as [number, SqlStorageValue])[0] + 1;
          yield decodeRows(encoding, rows);
        }
        if (rows.length === batchSize) continue;
        if (!reachedTail) {
          reachedTail = true;
          // Application code: an append it makes synchronously moves `version`, so it is read below.
          onUpToDate?.();
        }
        // Unchanged `version`: nothing was written anywhere since the page read.
        if (waits.version !== seen) continue;
        if (streamingAt !== waits.endings) {
          const state = store.stateOf(key);
          if (state === null) {
            onGone?.(this.#purged.get(key) ?? "deleted");
            return;
          }
          if (state !== "streaming") {
            if (rows.length === 0) return;
            continue;
          }
          streamingAt = waits.endings;
        }
        // The signal may have fired while the consumer held the last batch (no one was parked then).
        if (signal?.aborted) throw abortReason(signal);
        await new Promise<void>((wake) => {
          waiter = wake;
          waits.park(key, wake);
        });
        if (waiter !== null) waits.unpark(key, waiter);
        waiter = null;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (waiter !== null) waits.unpark(key, waiter);
    }
  }

  #readTarget(streamId: string, signal: AbortSignal | undefined): ReadTarget {
    if (signal?.aborted) throw abortReason(signal);
    assertStreamId(streamId);
    const row = this.#liveRow(streamId);
    return { key: row.stream_key, streamId, encoding: row.encoding };
  }

  // ── Status and list ──

  /**
   * The stream's state and cursor, or null when it does not exist (or has expired).
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed id.
   */
  status(streamId: string): StreamStatus | null {
    assertStreamId(streamId);
    const row = this.#store.byId(streamId);
    if (row === null) return null;
    return this.#statusOf(row, this.#now());
  }

  /**
   * Lists streams newest first, optionally by `tag` (indexed) and `state` (the field of
   * {@link StreamStatus}), one page at a time: pass a page's `next` back as `cursor`.
   * @throws {StreamsArgumentError} `streams/invalid-argument` for a malformed `limit`, `cursor`, `tag` or `state`.
   */
  list(options: StreamListOptions = {}): StreamList {
    readObject(options, "list() options");
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new StreamsArgumentError(
        `list() limit must be an integer from 1 to 1000; got ${limit}.`,
      );
    }
    let before = Number.MAX_SAFE_INTEGER;
    if (options.cursor !== undefined) {
      before = Number(options.cursor);
      if (
        typeof options.cursor !== "string" ||
        !/^\d+$/.test(options.cursor) ||
        !Number.isSafeInteger(before)
      ) {
        throw new StreamsArgumentError(
          `list() cursor must be the next token of a previous page; got ${JSON.stringify(options.cursor)}.`,
        );
      }
    }
    if (options.tag !== undefined) assertTag(options.tag);
    const states: StreamState[] =
      options.state === undefined
        ? []
        : Array.isArray(options.state)
          ? options.state
          : [options.state];
    for (const state of states) {
      if (state !== "streaming" && state !== "completed" && state !== "errored") {
        throw new StreamsArgumentError(
          `list() state must be "streaming", "completed" or "errored"; got ${JSON.stringify(state)}.`,
        );
      }
    }
    const rows = this.#store.list(options.tag, states, before, limit);
    const now = this.#now();
    const items: StreamStatus[] = [];
    for (const row of rows) {
      const status = this.#statusOf(row, now);
      if (status !== null) items.push(status);
    }
    const last = rows[rows.length - 1];
    return { items, next: rows.length === limit && last ? String(last.stream_key) : null };
  }

  /** A stream row as the public status, with its cursor and true expiry; null once it has expired. */
  #statusOf(row: StreamRow, now: number): StreamStatus | null {
    const tail = row.state === "streaming" ? this.#chunks.tail(row.stream_key) : null;
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
    if (row.settled_ttl_ms !== null) status.settledTtlMs = row.settled_ttl_ms;
    if (expiresAt !== null) status.expiresAt = expiresAt;
    return status;
  }

  /** A stream's cursor: the final cursor of a settled stream, else one past the chunk log's tail. */
  #cursorOf(row: StreamHead): number {
    if (row.state !== "streaming") return row.final_cursor ?? 0;
    return (this.#chunks.tail(row.stream_key)?.seq ?? -1) + 1;
  }

  /** A row that exists and has not expired, or a not-found error. */
  #liveRow(streamId: string): StreamHead {
    const row = this.#store.headById(streamId);
    if (row === null || this.#expiredAt(row, this.#now())) throw new StreamNotFoundError(streamId);
    return row;
  }

  // ── Retention ──

  /**
   * When retention next needs the alarm (epoch ms), or null. It is a lower bound: a stream that was
   * appended to since may turn out not to be due, and `alarm()` then moves its wake later.
   */
  nextWakeAt(): number | null {
    return this.#store.earliestWake();
  }

  /**
   * Retention sweep, called through `Alarms` from the object's `alarm()`: deletes every stream whose
   * expiry has passed (up to `maxSweepStreams`, reported as `stream:expired`), reading its stream
   * row and, for a live stream, its newest chunk — never scanning chunks to decide. Streams not yet
   * due get their wake moved to their true expiry.
   */
  async alarm(): Promise<void> {
    const store = this.#store;
    const now = this.#now();
    for (const row of store.due(now, this.#maxSweepStreams)) {
      const expiry = expiryOf(row, this.#lastAppendAt(row));
      if (isExpired(expiry, now)) {
        store.transaction(() => store.deleteStream(row.stream_key));
        this.#afterPurge(row, "expired");
      } else {
        // wake_at stays a lower bound of the expiry: now it is the expiry itself.
        store.setWake(row.stream_key, expiry);
      }
    }
  }

  /**
   * Asks (earlier-only) for a wake no later than `at`. Not awaited: the write path stays
   * synchronous, and the alarm write is ordered before the object's next output. A failed alarm
   * write is not fatal: `nextWakeAt()` still reports the wake, and `Alarms` arms it after the next
   * alarm.
   */
  #requestWake(at: number): void {
    requestWake(this.#ctx, at).catch(() => {});
  }

  /** The time of a live stream's newest chunk (from this isolate's entry when it has one), or null. */
  #lastAppendAt(row: StreamHead): number | null {
    if (row.state !== "streaming") return null;
    const cached = this.#entries.cached(row.stream_id);
    if (cached !== undefined && cached.key === row.stream_key) return cached.lastAppendAt;
    return this.#chunks.tail(row.stream_key)?.at ?? null;
  }

  /** True when a stream row has expired at `now`, counting its newest chunk as activity. */
  #expiredAt(row: StreamHead, now: number): boolean {
    if (ttlOf(row) === null && row.expires_at === null) return false;
    return isExpired(expiryOf(row, this.#lastAppendAt(row)), now);
  }
}
