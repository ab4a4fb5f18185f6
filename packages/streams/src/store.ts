import type { ChunkBody } from "./codec";
import type { StreamEncoding, StreamState } from "./types";

/** A `dk_streams_streams` row. */
export interface StreamRow {
  stream_key: number;
  stream_id: string;
  state: StreamState;
  content_type: string;
  encoding: StreamEncoding;
  tag: string | null;
  metadata: string | null;
  error: string | null;
  ttl_ms: number | null;
  expires_at: number | null;
  created_at: number;
  touched_at: number;
  closed_at: number | null;
  final_cursor: number | null;
  closer_producer: number | null;
  closer_epoch: number | null;
  closer_seq: number | null;
  wake_at: number | null;
}

/** The part of a stream row that reads, expiry checks and one-shot writes use. */
export type StreamHead = Pick<
  StreamRow,
  | "stream_key"
  | "stream_id"
  | "state"
  | "encoding"
  | "ttl_ms"
  | "expires_at"
  | "touched_at"
  | "final_cursor"
>;

/** The columns a new stream row is created with. */
export interface NewStream {
  streamId: string;
  contentType: string;
  encoding: StreamEncoding;
  tag: string | null;
  metadata: string | null;
  ttlMs: number | null;
  expiresAt: number | null;
  now: number;
  wakeAt: number | null;
}

/** Producer columns of a chunk row (all null for writes without a producer). */
export interface ChunkProducer {
  no: number;
  epoch: number;
  seq: number;
}

/** The settlement columns. */
export interface Settlement {
  state: "completed" | "errored";
  error: string | null;
  now: number;
  finalCursor: number;
  closer: ChunkProducer | null;
  wakeAt: number | null;
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

const STREAM_COLUMNS = [
  "stream_key",
  "stream_id",
  "state",
  "content_type",
  "encoding",
  "tag",
  "metadata",
  "error",
  "ttl_ms",
  "expires_at",
  "created_at",
  "touched_at",
  "closed_at",
  "final_cursor",
  "closer_producer",
  "closer_epoch",
  "closer_seq",
  "wake_at",
] as const;
const SELECT_STREAM = `SELECT ${STREAM_COLUMNS.join(", ")} FROM dk_streams_streams`;

/** Builds stream rows from raw tuples: much cheaper than letting the cursor build objects. */
function toRows(cursor: SqlStorageCursor<Record<string, SqlStorageValue>>): StreamRow[] {
  const rows: StreamRow[] = [];
  for (const v of cursor.raw()) {
    rows.push({
      stream_key: v[0] as number,
      stream_id: v[1] as string,
      state: v[2] as StreamState,
      content_type: v[3] as string,
      encoding: v[4] as StreamEncoding,
      tag: v[5] as string | null,
      metadata: v[6] as string | null,
      error: v[7] as string | null,
      ttl_ms: v[8] as number | null,
      expires_at: v[9] as number | null,
      created_at: v[10] as number,
      touched_at: v[11] as number,
      closed_at: v[12] as number | null,
      final_cursor: v[13] as number | null,
      closer_producer: v[14] as number | null,
      closer_epoch: v[15] as number | null,
      closer_seq: v[16] as number | null,
      wake_at: v[17] as number | null,
    });
  }
  return rows;
}

/**
 * Every SQL statement of the package, over the object's SQLite. Methods are synchronous; a caller
 * that needs several of them to commit together wraps them in `transactionSync`.
 */
export class StreamStore {
  readonly #storage: DurableObjectStorage;
  readonly #sql: SqlStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = storage.sql;
  }

  /** Runs `fn` in one SQLite transaction (nested calls become savepoints). */
  transaction<T>(fn: () => T): T {
    return this.#storage.transactionSync(fn);
  }

  byId(streamId: string): StreamRow | null {
    return toRows(this.#sql.exec(`${SELECT_STREAM} WHERE stream_id = ?`, streamId))[0] ?? null;
  }

  /** The columns reads and one-shot writes need, by id: cheaper than the whole row. */
  headById(streamId: string): StreamHead | null {
    for (const v of this.#sql
      .exec(
        "SELECT stream_key, state, encoding, ttl_ms, expires_at, touched_at, final_cursor FROM dk_streams_streams WHERE stream_id = ?",
        streamId,
      )
      .raw()) {
      return {
        stream_key: v[0] as number,
        stream_id: streamId,
        state: v[1] as StreamState,
        encoding: v[2] as StreamEncoding,
        ttl_ms: v[3] as number | null,
        expires_at: v[4] as number | null,
        touched_at: v[5] as number,
        final_cursor: v[6] as number | null,
      };
    }
    return null;
  }

  byKey(key: number): StreamRow | null {
    return toRows(this.#sql.exec(`${SELECT_STREAM} WHERE stream_key = ?`, key))[0] ?? null;
  }

  /** The state of a stream by key, or null when it no longer exists. */
  stateOf(key: number): StreamState | null {
    for (const row of this.#sql
      .exec("SELECT state FROM dk_streams_streams WHERE stream_key = ?", key)
      .raw()) {
      return row[0] as StreamState;
    }
    return null;
  }

  /** Inserts a stream row and returns its new key. */
  insertStream(row: NewStream): number {
    const inserted = this.#sql
      .exec<{ stream_key: number }>(
        `INSERT INTO dk_streams_streams
          (stream_id, state, content_type, encoding, tag, metadata, ttl_ms, expires_at,
           created_at, touched_at, wake_at)
         VALUES (?, 'streaming', ?, ?, ?, ?, ?, ?, ?, ?, ?)
         RETURNING stream_key`,
        row.streamId,
        row.contentType,
        row.encoding,
        row.tag,
        row.metadata,
        row.ttlMs,
        row.expiresAt,
        row.now,
        row.now,
        row.wakeAt,
      )
      .one();
    return inserted.stream_key;
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

  /** Settles a streaming row; returns false when it was not streaming (settled or deleted). */
  settle(key: number, settlement: Settlement): boolean {
    const { closer } = settlement;
    const written = this.#sql.exec(
      `UPDATE dk_streams_streams
         SET state = ?, error = ?, closed_at = ?, touched_at = ?, final_cursor = ?,
             closer_producer = ?, closer_epoch = ?, closer_seq = ?, wake_at = ?
       WHERE stream_key = ? AND state = 'streaming'`,
      settlement.state,
      settlement.error,
      settlement.now,
      settlement.now,
      settlement.finalCursor,
      closer?.no ?? null,
      closer?.epoch ?? null,
      closer?.seq ?? null,
      settlement.wakeAt,
      key,
    ).rowsWritten;
    return written > 0;
  }

  /** One page of chunk rows as `[seq, body]` tuples, in seq order. */
  page(key: number, from: number, limit: number): [number, SqlStorageValue][] {
    // `raw()` returns a cursor with `toArray()` (as documented), though the type says iterator.
    const raw = this.#sql.exec(PAGE, key, from, limit).raw() as unknown as {
      toArray(): [number, SqlStorageValue][];
    };
    return raw.toArray();
  }

  producer(key: number, producerId: string): { no: number; since: number } | null {
    return (
      this.#sql
        .exec<{ no: number; since: number }>(
          "SELECT producer_no AS no, since_seq AS since FROM dk_streams_producers WHERE stream_key = ? AND producer_id = ?",
          key,
          producerId,
        )
        .toArray()[0] ?? null
    );
  }

  /** Registers a producer on a stream and returns its number (1, 2, … per stream). */
  registerProducer(key: number, producerId: string, since: number): number {
    const next = this.#sql
      .exec<{ no: number }>(
        "SELECT COALESCE(MAX(producer_no), 0) + 1 AS no FROM dk_streams_producers WHERE stream_key = ?",
        key,
      )
      .one().no;
    this.#sql.exec(
      "INSERT INTO dk_streams_producers (stream_key, producer_id, producer_no, since_seq) VALUES (?, ?, ?, ?)",
      key,
      producerId,
      next,
      since,
    );
    return next;
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

  /** Deletes a stream's chunks, producers and row. Returns whether the row existed. */
  deleteStream(key: number): boolean {
    this.#sql.exec("DELETE FROM dk_streams_chunks WHERE stream_key = ?", key);
    this.#sql.exec("DELETE FROM dk_streams_producers WHERE stream_key = ?", key);
    return (
      this.#sql.exec("DELETE FROM dk_streams_streams WHERE stream_key = ?", key).rowsWritten > 0
    );
  }

  touch(key: number, now: number, wakeAt: number | null): void {
    this.#sql.exec(
      "UPDATE dk_streams_streams SET touched_at = ?, wake_at = ? WHERE stream_key = ?",
      now,
      wakeAt,
      key,
    );
  }

  setWake(key: number, wakeAt: number | null): void {
    this.#sql.exec("UPDATE dk_streams_streams SET wake_at = ? WHERE stream_key = ?", wakeAt, key);
  }

  /** Streams whose expiry lower bound has passed, earliest first. */
  due(now: number, limit: number): StreamRow[] {
    return toRows(
      this.#sql.exec(`${SELECT_STREAM} WHERE wake_at <= ? ORDER BY wake_at LIMIT ?`, now, limit),
    );
  }

  /** The earliest expiry lower bound: one read of the `wake_at` index. */
  earliestWake(): number | null {
    return (
      this.#sql
        .exec<{ at: number | null }>(
          "SELECT MIN(wake_at) AS at FROM dk_streams_streams WHERE wake_at IS NOT NULL",
        )
        .one().at ?? null
    );
  }

  /** Stream rows newest first (by key), filtered by tag and states, before key `before`. */
  list(
    tag: string | undefined,
    states: readonly StreamState[],
    before: number,
    limit: number,
  ): StreamRow[] {
    const where: string[] = ["stream_key < ?"];
    const params: SqlStorageValue[] = [before];
    if (tag !== undefined) {
      where.push("tag = ?");
      params.push(tag);
    }
    if (states.length > 0) {
      where.push(`state IN (${states.map(() => "?").join(", ")})`);
      params.push(...states);
    }
    params.push(limit);
    return toRows(
      this.#sql.exec(
        `${SELECT_STREAM} WHERE ${where.join(" AND ")} ORDER BY stream_key DESC LIMIT ?`,
        ...params,
      ),
    );
  }
}
