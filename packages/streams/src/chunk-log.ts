import type { ChunkBody } from "./codec";

/** Producer columns of a chunk row (all null for writes without a producer). */
export interface ChunkProducer {
  no: number;
  epoch: number;
  seq: number;
}

// The append is one plain insert; the `dk_streams_chunks_fence` trigger (see schema.ts) skips it
// — rowsWritten 0 — when the stream is not streaming or the previous seq is missing (the in-memory
// cursor is ahead of storage, e.g. after a host rolled back a transaction around an append), and
// OR IGNORE skips it when the seq is taken (the cursor is behind).
const APPEND = `INSERT OR IGNORE INTO dk_streams_chunks
  (stream_key, seq, at, body, producer, producer_epoch, producer_seq, writer_seq)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

// The same, for a write without producer or writer seq (the common case): fewer bindings.
const APPEND_PLAIN = `INSERT OR IGNORE INTO dk_streams_chunks (stream_key, seq, at, body)
  VALUES (?, ?, ?, ?)`;

const PAGE = `SELECT seq, body FROM dk_streams_chunks
  WHERE stream_key = ? AND seq >= ? ORDER BY seq LIMIT ?`;

/**
 * The chunk-log SQL: appends, pages and backward scans of `dk_streams_chunks`, one stream's chunks
 * keyed by `(stream_key, seq)`. Methods are synchronous; transactions are the caller's
 * (see {@link StreamStore.transaction}).
 */
export class ChunkLog {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** The newest chunk's seq and time: one primary-key seek from the end. */
  tail(key: number): { seq: number; at: number } | null {
    for (const row of this.#sql
      .exec(
        "SELECT seq, at FROM dk_streams_chunks WHERE stream_key = ? ORDER BY seq DESC LIMIT 1",
        key,
      )
      .raw()) {
      return { seq: row[0] as number, at: row[1] as number };
    }
    return null;
  }

  /** The fenced single-chunk append (see {@link APPEND}); returns rows written, 1 or 0. */
  appendFenced(
    key: number,
    seq: number,
    at: number,
    body: ChunkBody,
    producer: ChunkProducer | null,
    writerSeq: string | null,
  ): number {
    if (producer === null && writerSeq === null) {
      return this.#sql.exec(APPEND_PLAIN, key, seq, at, body).rowsWritten;
    }
    return this.#sql.exec(
      APPEND,
      key,
      seq,
      at,
      body,
      producer?.no ?? null,
      producer?.epoch ?? null,
      producer?.seq ?? null,
      writerSeq,
    ).rowsWritten;
  }

  /**
   * Inserts one chunk of a multi-chunk write inside a transaction that already fenced; returns rows
   * written (0 only if the fence trigger disagrees, which the caller treats as a stale cursor).
   */
  insertChunk(
    key: number,
    seq: number,
    at: number,
    body: ChunkBody,
    producer: ChunkProducer | null,
    writerSeq: string | null,
  ): number {
    return this.appendFenced(key, seq, at, body, producer, writerSeq);
  }

  /** One page of chunk rows as `[seq, body]` tuples, in seq order. */
  page(key: number, from: number, limit: number): [number, SqlStorageValue][] {
    // `raw()` returns a cursor with `toArray()` (as documented), though the type says iterator.
    const raw = this.#sql.exec(PAGE, key, from, limit).raw() as unknown as {
      toArray(): [number, SqlStorageValue][];
    };
    return raw.toArray();
  }

  /**
   * The newest chunk a producer wrote at or after `since`: a backward scan of the stream's primary
   * key from the tail that stops at the first match (usually the tail itself).
   */
  lastProducerChunk(
    key: number,
    no: number,
    since: number,
  ): { seq: number; epoch: number; pseq: number } | null {
    return (
      this.#sql
        .exec<{ seq: number; epoch: number; pseq: number }>(
          `SELECT seq, producer_epoch AS epoch, producer_seq AS pseq FROM dk_streams_chunks
           WHERE stream_key = ? AND seq >= ? AND producer = ? ORDER BY seq DESC LIMIT 1`,
          key,
          since,
          no,
        )
        .toArray()[0] ?? null
    );
  }

  /** The seq range a producer write stored, searching backward from `upTo`; null when it stored none. */
  producerWrite(
    key: number,
    producer: ChunkProducer,
    upTo: number,
  ): { first: number; last: number } | null {
    const last = this.#sql
      .exec<{ seq: number }>(
        `SELECT seq FROM dk_streams_chunks
         WHERE stream_key = ? AND seq <= ? AND producer = ? AND producer_epoch = ? AND producer_seq = ?
         ORDER BY seq DESC LIMIT 1`,
        key,
        upTo,
        producer.no,
        producer.epoch,
        producer.seq,
      )
      .toArray()[0]?.seq;
    if (last === undefined) return null;
    // A write's chunks are contiguous (one transaction), so the first is just after the nearest
    // earlier chunk that is not part of it.
    const before = this.#sql
      .exec<{ seq: number }>(
        `SELECT seq FROM dk_streams_chunks
         WHERE stream_key = ? AND seq < ?
           AND NOT (producer IS ? AND producer_epoch IS ? AND producer_seq IS ?)
         ORDER BY seq DESC LIMIT 1`,
        key,
        last,
        producer.no,
        producer.epoch,
        producer.seq,
      )
      .toArray()[0]?.seq;
    return { first: before === undefined ? 0 : before + 1, last };
  }

  /** The newest `writer_seq` of a stream: a backward scan that stops at the first chunk carrying one. */
  lastWriterSeq(key: number): string | null {
    return (
      this.#sql
        .exec<{ writer_seq: string }>(
          `SELECT writer_seq FROM dk_streams_chunks
           WHERE stream_key = ? AND writer_seq IS NOT NULL ORDER BY seq DESC LIMIT 1`,
          key,
        )
        .toArray()[0]?.writer_seq ?? null
    );
  }
}
