import type { ChunkLog } from "./chunk-log";
import { StreamClosedError } from "./errors";
import type { ProducerState } from "./producer";
import type { StreamHead, StreamStore } from "./store";
import type { StreamEncoding, StreamWriteResult } from "./types";

/**
 * What this isolate remembers about a stream it writes to. Everything here is a cache of storage:
 * the write statement only succeeds when `cursor` matches the chunk log's tail, and any mismatch
 * (a host rolled back a transaction around a write, another instance wrote) marks the entry stale
 * and it is rebuilt from storage before the write is judged again.
 */
export interface LiveEntry {
  readonly key: number;
  readonly streamId: string;
  readonly encoding: StreamEncoding;
  readonly ttlMs: number | null;
  /** The time to live once settled (null: `ttlMs` goes on applying). */
  readonly settledTtlMs: number | null;
  readonly expiresAt: number | null;
  /** Next seq; equals the tail + 1 whenever the entry is coherent. */
  cursor: number;
  /** Time of the newest chunk, for sliding expiry. */
  lastAppendAt: number | null;
  producers: Map<string, ProducerMemory>;
  /** Newest `writer_seq`; undefined until first needed. */
  writerSeq: string | null | undefined;
  stale: boolean;
}

/** One producer, as far as this isolate knows. */
export interface ProducerMemory {
  /** The producer's number on this stream, null until its first write registers it. */
  no: number | null;
  /** Epoch and highest accepted sequence number, null before its first accepted write. */
  state: ProducerState | null;
}

const CACHE_LIMIT = 10_000;

/**
 * The per-isolate cache of live-stream entries and the recovery of what they hold from storage:
 * an entry's cursor from the chunk log's tail, a producer's number and state from its registry row,
 * newest chunk and the settling write. Bounded to the most recently used streams.
 */
export class EntryCache {
  readonly #store: StreamStore;
  readonly #chunks: ChunkLog;
  readonly #cache = new Map<string, LiveEntry>();

  constructor(store: StreamStore, chunks: ChunkLog) {
    this.#store = store;
    this.#chunks = chunks;
  }

  /** The cached entry for a stream row, or a fresh one built with one tail read. */
  entryFor(row: StreamHead): LiveEntry {
    const cached = this.#cache.get(row.stream_id);
    if (cached !== undefined && cached.key === row.stream_key && !cached.stale) return cached;
    const tail = row.state === "streaming" ? this.#chunks.tail(row.stream_key) : null;
    const entry: LiveEntry = {
      key: row.stream_key,
      streamId: row.stream_id,
      encoding: row.encoding,
      ttlMs: row.ttl_ms,
      settledTtlMs: row.settled_ttl_ms,
      expiresAt: row.expires_at,
      cursor: row.state === "streaming" ? (tail?.seq ?? -1) + 1 : (row.final_cursor ?? 0),
      lastAppendAt: tail?.at ?? null,
      producers: new Map(),
      writerSeq: undefined,
      stale: false,
    };
    if (row.state === "streaming") {
      this.#cache.delete(row.stream_id);
      this.#cache.set(row.stream_id, entry);
      if (this.#cache.size > CACHE_LIMIT) {
        const oldest = this.#cache.keys().next().value;
        if (oldest !== undefined) this.#cache.delete(oldest);
      }
    }
    return entry;
  }

  /** The cached entry of a live stream, if this isolate has one. */
  cached(streamId: string): LiveEntry | undefined {
    const entry = this.#cache.get(streamId);
    return entry?.stale ? undefined : entry;
  }

  /** Forgets a stream (settled, deleted or expired); without `key`, whatever is cached under the id. */
  forget(streamId: string, key?: number): void {
    const entry = this.#cache.get(streamId);
    if (entry !== undefined && (key === undefined || entry.key === key)) {
      entry.stale = true;
      this.#cache.delete(streamId);
    }
  }

  /**
   * Records that a producer opened with `epoch`, newer than any the stream holds for it: one row
   * written, then every write of an older epoch is fenced (here and after a restart).
   */
  recordEpoch(entry: LiveEntry, producerId: string, epoch: number): void {
    const memory = this.producer(entry, producerId);
    memory.no = this.#store.fenceProducer(entry.key, producerId, memory.no, entry.cursor, epoch);
    memory.state = { epoch, seq: -1 };
  }

  /** What this isolate knows of one producer of a stream, loaded from storage once per isolate and stream. */
  producer(entry: LiveEntry, producerId: string): ProducerMemory {
    const known = entry.producers.get(producerId);
    if (known !== undefined) return known;
    const registered = this.#store.producer(entry.key, producerId);
    let memory: ProducerMemory = { no: null, state: null };
    if (registered !== null) {
      const row = this.#store.byKey(entry.key);
      const chunk = this.#chunks.lastProducerChunk(entry.key, registered.no, registered.since);
      let state: ProducerState | null =
        chunk === null ? null : { epoch: chunk.epoch, seq: chunk.pseq };
      // A settling write is the producer's last; it may have stored no chunk.
      if (
        row?.closer_producer === registered.no &&
        row.closer_epoch !== null &&
        row.closer_seq !== null
      ) {
        state = { epoch: row.closer_epoch, seq: row.closer_seq };
      }
      // An epoch `open` recorded before the producer wrote in it fences every older one.
      if (
        registered.fencedEpoch !== null &&
        (state === null || registered.fencedEpoch > state.epoch)
      ) {
        state = { epoch: registered.fencedEpoch, seq: -1 };
      }
      memory = { no: registered.no, state };
    }
    entry.producers.set(producerId, memory);
    return memory;
  }

  /**
   * The answer to a producer retry, recovered from storage: what the original write stored, nothing
   * written. Null when memory is ahead of storage (a rolled-back write): the caller retries.
   * @throws {StreamClosedError} `streams/closed` when the stream was deleted.
   */
  duplicateOf(
    entry: LiveEntry,
    producerId: string,
    memory: ProducerMemory,
    epoch: number,
    seq: number,
  ): StreamWriteResult | null {
    // The verdict came from memory; make sure memory is not ahead of storage (a rolled-back write)
    // before answering "already written".
    if ((this.#chunks.tail(entry.key)?.seq ?? -1) + 1 !== entry.cursor) return null;
    const row = this.#store.byKey(entry.key);
    if (row === null) throw new StreamClosedError(entry.streamId, "deleted");
    const range =
      memory.no === null
        ? null
        : this.#chunks.producerWrite(entry.key, { no: memory.no, epoch, seq }, entry.cursor - 1);
    const closedByIt =
      row.closer_producer === memory.no && row.closer_epoch === epoch && row.closer_seq === seq;
    if (range === null && !closedByIt) {
      // Memory claims a write storage does not show.
      if (row.state === "streaming") return null;
    }
    const state = memory.state as ProducerState;
    return {
      firstSeq: range?.first ?? null,
      lastSeq: range?.last ?? null,
      cursor: row.state === "streaming" ? entry.cursor : (row.final_cursor ?? entry.cursor),
      duplicate: true,
      settled: false,
      state: row.state,
      producer: { id: producerId, epoch: state.epoch, seq: state.seq },
    };
  }
}
