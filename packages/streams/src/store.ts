import type { ChunkProducer } from "./chunk-log";
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
  settled_ttl_ms: number | null;
}

/** The part of a stream row that reads, expiry checks and one-shot writes use. */
export type StreamHead = Pick<
  StreamRow,
  | "stream_key"
  | "stream_id"
  | "state"
  | "encoding"
  | "ttl_ms"
  | "settled_ttl_ms"
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
  settledTtlMs: number | null;
  expiresAt: number | null;
  now: number;
  wakeAt: number | null;
}

/** The columns an imported stream ends with (see {@link StreamStore.finishImport}). */
export interface ImportedStream {
  state: StreamState;
  error: string | null;
  ttlMs: number | null;
  settledTtlMs: number | null;
  expiresAt: number | null;
  touchedAt: number;
  closedAt: number | null;
  finalCursor: number | null;
  wakeAt: number | null;
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
  "settled_ttl_ms",
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
      settled_ttl_ms: v[18] as number | null,
    });
  }
  return rows;
}

/**
 * The stream-row and producer-registry SQL over the object's SQLite (the chunk rows themselves are
 * {@link ChunkLog}'s). Methods are synchronous; a caller that needs several statements of either
 * to commit together wraps them in {@link StreamStore.transaction}.
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
        "SELECT stream_key, state, encoding, ttl_ms, expires_at, touched_at, final_cursor, settled_ttl_ms FROM dk_streams_streams WHERE stream_id = ?",
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
        settled_ttl_ms: v[7] as number | null,
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
          (stream_id, state, content_type, encoding, tag, metadata, ttl_ms, settled_ttl_ms,
           expires_at, created_at, touched_at, wake_at)
         VALUES (?, 'streaming', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         RETURNING stream_key`,
        row.streamId,
        row.contentType,
        row.encoding,
        row.tag,
        row.metadata,
        row.ttlMs,
        row.settledTtlMs,
        row.expiresAt,
        row.now,
        row.now,
        row.wakeAt,
      )
      .one();
    return inserted.stream_key;
  }

  /**
   * The last statement of an import: sets the state, timestamps and retention columns of a row
   * that {@link insertStream} created without retention (so the fence trigger, which judges expiry
   * at each chunk's own time, accepted every imported chunk).
   */
  finishImport(key: number, row: ImportedStream): void {
    this.#sql.exec(
      `UPDATE dk_streams_streams
         SET state = ?, error = ?, ttl_ms = ?, settled_ttl_ms = ?, expires_at = ?, touched_at = ?,
             closed_at = ?, final_cursor = ?, wake_at = ?
       WHERE stream_key = ?`,
      row.state,
      row.error,
      row.ttlMs,
      row.settledTtlMs,
      row.expiresAt,
      row.touchedAt,
      row.closedAt,
      row.finalCursor,
      row.wakeAt,
      key,
    );
  }

  /** Replaces a stream's metadata (one row written; retention untouched). */
  setMetadata(key: number, metadata: string | null): void {
    this.#sql.exec(
      "UPDATE dk_streams_streams SET metadata = ? WHERE stream_key = ?",
      metadata,
      key,
    );
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

  /** A producer's registry row: its number, the seq it registered at, the epoch `open` recorded. */
  producer(
    key: number,
    producerId: string,
  ): { no: number; since: number; fencedEpoch: number | null } | null {
    return (
      this.#sql
        .exec<{ no: number; since: number; fencedEpoch: number | null }>(
          "SELECT producer_no AS no, since_seq AS since, fenced_epoch AS fencedEpoch FROM dk_streams_producers WHERE stream_key = ? AND producer_id = ?",
          key,
          producerId,
        )
        .toArray()[0] ?? null
    );
  }

  /**
   * Records the epoch a producer opened with (one row written): registers the producer when the
   * stream has not seen it, and returns its number.
   */
  fenceProducer(
    key: number,
    producerId: string,
    no: number | null,
    since: number,
    epoch: number,
  ): number {
    if (no === null) return this.registerProducer(key, producerId, since, epoch);
    this.#sql.exec(
      "UPDATE dk_streams_producers SET fenced_epoch = ? WHERE stream_key = ? AND producer_id = ?",
      epoch,
      key,
      producerId,
    );
    return no;
  }

  /** Registers a producer on a stream and returns its number (1, 2, … per stream). */
  registerProducer(
    key: number,
    producerId: string,
    since: number,
    fencedEpoch: number | null = null,
  ): number {
    const next = this.#sql
      .exec<{ no: number }>(
        "SELECT COALESCE(MAX(producer_no), 0) + 1 AS no FROM dk_streams_producers WHERE stream_key = ?",
        key,
      )
      .one().no;
    this.#sql.exec(
      "INSERT INTO dk_streams_producers (stream_key, producer_id, producer_no, since_seq, fenced_epoch) VALUES (?, ?, ?, ?, ?)",
      key,
      producerId,
      next,
      since,
      fencedEpoch,
    );
    return next;
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
