import type { ChunkLog, ChunkProducer } from "./chunk-log";
import type { ChunkBody } from "./codec";
import { EntryCache, type LiveEntry, type ProducerMemory } from "./entry-cache";
import {
  ProducerFencedError,
  ProducerSequenceError,
  StreamClosedError,
  StreamsArgumentError,
  WriterSeqRegressionError,
} from "./errors";
import type { EventSink } from "./events";
import { judgeProducerWrite, nextProducerSeq } from "./producer";
import { expiryOf } from "./retention";
import type { StreamStore } from "./store";
import type { StreamState, StreamWriteResult } from "./types";
import type { WaitRegistry } from "./wait-registry";

/** A write, as the writer and `Streams.write` describe it to the core. */
export interface WriteRequest {
  bodies: ChunkBody[];
  producer?: { id: string; epoch: number; seq: number | "auto" | "fence-only" };
  writerSeq?: string;
  settle?: { state: "completed" | "errored"; reason: string | null };
}

/** Something holding an entry that the core may replace with a fresh one (a writer). */
export interface EntryHolder {
  entry: LiveEntry;
}

const RETRY = Symbol("retry");

/** Thrown inside a write transaction to roll it back when storage is not where memory thought. */
class StaleCursor extends Error {}

/**
 * The shared machinery behind `Streams` and its writers: the storage handles, the entry cache
 * (see entry-cache.ts) and the write path. Not exported from the package.
 */
export class StreamsCore {
  readonly store: StreamStore;
  readonly chunks: ChunkLog;
  readonly entries: EntryCache;
  readonly waits: WaitRegistry;
  readonly events: EventSink;
  readonly now: () => number;
  readonly armAlarm: ((at: number) => void) | undefined;

  constructor(
    store: StreamStore,
    chunks: ChunkLog,
    waits: WaitRegistry,
    events: EventSink,
    now: () => number,
    armAlarm: ((at: number) => void) | undefined,
  ) {
    this.store = store;
    this.chunks = chunks;
    this.entries = new EntryCache(store, chunks);
    this.waits = waits;
    this.events = events;
    this.now = now;
    this.armAlarm = armAlarm;
  }

  /**
   * The hot path of `writer.append(chunk)` without options or producer: one fenced statement, no
   * allocations beyond the chunk body. Anything unusual (a stale entry, a settled or deleted
   * stream, a cursor mismatch) falls through to {@link write}, which sorts it out.
   */
  appendOne(holder: EntryHolder, body: ChunkBody): number {
    const entry = holder.entry;
    if (!entry.stale) {
      const seq = entry.cursor;
      const now = this.now();
      if (this.chunks.appendFenced(entry.key, seq, now, body, null, null) === 1) {
        entry.cursor = seq + 1;
        entry.lastAppendAt = now;
        this.events.appended(entry.key, entry.streamId, seq, seq);
        this.waits.wake(entry.key, false);
        return seq;
      }
    }
    return this.write(holder, { bodies: [body] }).firstSeq as number;
  }

  /**
   * Performs one write: producer judgement, writer-seq check, the fenced insert(s) and the optional
   * settlement, then wakes readers and reports events. Retries on a stale entry.
   */
  write(holder: EntryHolder, request: WriteRequest): StreamWriteResult {
    if (request.bodies.length === 0 && request.settle === undefined) {
      throw new StreamsArgumentError(
        "A write needs at least one chunk (or a settle); an empty append means nothing.",
        holder.entry.streamId,
      );
    }
    for (let attempt = 0; attempt < 4; attempt++) {
      if (holder.entry.stale) {
        const row = this.store.byKey(holder.entry.key);
        if (row === null) return this.#gone(holder.entry, request);
        holder.entry = this.entries.entryFor(row);
      }
      const outcome = this.#attempt(holder.entry, request, attempt > 0);
      if (outcome !== RETRY) return outcome;
      holder.entry.stale = true;
    }
    // Only reachable if storage changes under every attempt, which one isolate cannot cause.
    throw new Error(`Stream "${holder.entry.streamId}" kept changing during a write; retry it.`);
  }

  #attempt(
    entry: LiveEntry,
    request: WriteRequest,
    fresh: boolean,
  ): StreamWriteResult | typeof RETRY {
    const { store, chunks } = this;
    const now = this.now();
    let memory: ProducerMemory | undefined;
    let tuple: { epoch: number; seq: number } | null = null;
    if (request.producer !== undefined) {
      const { id, epoch, seq: requested } = request.producer;
      memory = this.entries.producer(entry, id);
      if (requested === "fence-only") {
        if (memory.state !== null && epoch < memory.state.epoch) {
          throw new ProducerFencedError(entry.streamId, id, memory.state.epoch, epoch);
        }
      } else {
        const seq = requested === "auto" ? nextProducerSeq(memory.state, epoch) : requested;
        const verdict = judgeProducerWrite(memory.state, epoch, seq);
        if (verdict.kind === "fenced") {
          throw new ProducerFencedError(entry.streamId, id, verdict.currentEpoch, epoch);
        }
        if (verdict.kind === "gap") {
          throw new ProducerSequenceError(
            "streams/producer-seq-gap",
            entry.streamId,
            id,
            verdict.expected,
            seq,
          );
        }
        if (verdict.kind === "epoch-seq") {
          throw new ProducerSequenceError("streams/producer-epoch-seq", entry.streamId, id, 0, seq);
        }
        if (verdict.kind === "duplicate")
          return this.entries.duplicateOf(entry, id, memory, epoch, seq) ?? RETRY;
        tuple = { epoch, seq };
      }
    }
    if (request.writerSeq !== undefined) {
      if (entry.writerSeq === undefined) entry.writerSeq = chunks.lastWriterSeq(entry.key);
      const last = entry.writerSeq;
      if (last !== null && !(request.writerSeq > last)) {
        throw new WriterSeqRegressionError(entry.streamId, last, request.writerSeq);
      }
    }

    const { bodies, settle } = request;
    const count = bodies.length;
    const first = entry.cursor;
    const writerSeq = request.writerSeq ?? null;
    let written: ChunkProducer | null = null;
    const settledWake =
      settle === undefined
        ? null
        : expiryOf({ ttl_ms: entry.ttlMs, expires_at: entry.expiresAt, touched_at: now }, null);
    if (count === 1 && settle === undefined && (tuple === null || memory?.no != null)) {
      // Hot path: one statement, one row (see ChunkLog.appendFenced).
      written = tuple === null ? null : { no: memory?.no as number, ...tuple };
      if (
        chunks.appendFenced(entry.key, first, now, bodies[0] as ChunkBody, written, writerSeq) === 0
      ) {
        const state = store.stateOf(entry.key);
        if (state === null) return this.#gone(entry, request);
        if (state !== "streaming" && fresh) throw this.#closed(entry, state);
        return RETRY;
      }
    } else {
      const outcome = this.#transaction(
        (): ChunkProducer | null | "gone" | StreamState | typeof RETRY => {
          const state = store.stateOf(entry.key);
          if (state === null) return "gone";
          if (state !== "streaming") return state;
          if ((chunks.tail(entry.key)?.seq ?? -1) + 1 !== first) return RETRY;
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
          return producer;
        },
      );
      if (outcome === RETRY) return RETRY;
      if (outcome === "gone") return this.#gone(entry, request);
      if (typeof outcome === "string") {
        // A bare settle of a settled stream is the documented no-op; anything else is judged again
        // from storage (the producer may be retrying a write that settled it) before it is refused.
        if (count === 0 && tuple === null) return this.#alreadySettled(entry, outcome);
        if (!fresh) return RETRY;
        throw this.#closed(entry, outcome);
      }
      written = outcome;
      if (memory !== undefined && written !== null) memory.no = written.no;
    }

    entry.cursor = first + count;
    if (count > 0) entry.lastAppendAt = now;
    if (memory !== undefined && tuple !== null) memory.state = { ...tuple };
    if (count > 0 && request.writerSeq !== undefined) entry.writerSeq = request.writerSeq;
    if (count > 0) this.events.appended(entry.key, entry.streamId, first, first + count - 1);
    if (settle !== undefined) {
      this.entries.forget(entry.streamId, entry.key);
      this.events.emit(
        settle.state === "completed"
          ? { type: "stream:closed", streamId: entry.streamId, cursor: first + count }
          : {
              type: "stream:errored",
              streamId: entry.streamId,
              cursor: first + count,
              ...(settle.reason !== null ? { reason: settle.reason } : {}),
            },
      );
      if (settledWake !== null) this.armAlarm?.(settledWake);
    }
    this.waits.wake(entry.key, settle !== undefined);
    return {
      firstSeq: count > 0 ? first : null,
      lastSeq: count > 0 ? first + count - 1 : null,
      cursor: first + count,
      duplicate: false,
      settled: settle !== undefined,
      state: settle?.state ?? "streaming",
      ...(request.producer !== undefined && memory?.state
        ? { producer: { id: request.producer.id, ...memory.state } }
        : {}),
    };
  }

  /** `store.transaction`, turning a {@link StaleCursor} thrown inside (after its rollback) into a retry. */
  #transaction<T>(fn: () => T): T | typeof RETRY {
    try {
      return this.store.transaction(fn);
    } catch (error) {
      if (error instanceof StaleCursor) return RETRY;
      throw error;
    }
  }

  /** A write reached a deleted stream: a bare settle is a no-op, anything else is refused. */
  #gone(entry: LiveEntry, request: WriteRequest): StreamWriteResult {
    this.entries.forget(entry.streamId, entry.key);
    entry.stale = true;
    this.waits.wake(entry.key, true);
    if (request.bodies.length === 0 && request.settle !== undefined && !hasTuple(request)) {
      return {
        firstSeq: null,
        lastSeq: null,
        cursor: entry.cursor,
        duplicate: false,
        settled: false,
        state: request.settle.state,
      };
    }
    throw new StreamClosedError(entry.streamId, "deleted");
  }

  #alreadySettled(entry: LiveEntry, state: StreamState): StreamWriteResult {
    this.waits.wake(entry.key, true);
    return {
      firstSeq: null,
      lastSeq: null,
      cursor: entry.cursor,
      duplicate: false,
      settled: false,
      state,
    };
  }

  #closed(entry: LiveEntry, state: StreamState): StreamClosedError {
    this.waits.wake(entry.key, true);
    return new StreamClosedError(
      entry.streamId,
      state === "errored" ? "errored" : "completed",
      entry.cursor,
    );
  }
}

function hasTuple(request: WriteRequest): boolean {
  return request.producer !== undefined && request.producer.seq !== "fence-only";
}
