/** A JSON value: what a `json` stream stores per chunk. */
export type StreamJson =
  | string
  | number
  | boolean
  | null
  | StreamJson[]
  | { [key: string]: StreamJson };

/**
 * How a stream stores its chunks, fixed at creation.
 * - `json`: any JSON value, stored as JSON text, read back as the parsed value.
 * - `text`: strings (UTF-8 bytes are decoded strictly), read back as strings.
 * - `binary`: bytes (`Uint8Array`, `ArrayBuffer`, any `ArrayBufferView`; strings are UTF-8 encoded),
 *   read back as `Uint8Array`.
 */
export type StreamEncoding = "json" | "text" | "binary";

/** What an append accepts; the stream's encoding decides which forms are valid. */
export type StreamValue = StreamJson | Uint8Array | ArrayBuffer | ArrayBufferView;

/** A stream is `streaming` from creation until it settles as `completed` or `errored`; settled streams stay readable. */
export type StreamState = "streaming" | "completed" | "errored";

/** One durable chunk. `seq` is 0-based, gapless and stable: the stream's cursor when it was appended. */
export interface StreamChunk<T = unknown> {
  readonly seq: number;
  readonly chunk: T;
}

/** A producer identity for idempotent, fenced writes (the protocol's `Producer-Id` and `Producer-Epoch`). */
export interface StreamProducer {
  /** Stable, non-empty name of the logical producer (≤ 256 characters). */
  id: string;
  /** Session number, ≥ 0. A restarted producer uses a greater epoch, which fences the older one off. */
  epoch: number;
}

/** Options of {@link Streams.open}. Configuration options (`tag`, `contentType`, `encoding`, `ttlMs`, `settledTtlMs`, `expiresAt`) are fixed at creation. */
export interface StreamOpenOptions {
  /** Indexed, non-unique lookup key (`list({ tag })`). Reopening with a different tag is a config conflict. */
  tag?: string;
  /** JSON object kept with the stream; set at creation, ignored on reopen. */
  metadata?: Record<string, StreamJson>;
  /** MIME type of the stream (default `application/json`). Compared case-insensitively on reopen. */
  contentType?: string;
  /**
   * How chunks are stored. Default: `json` for `application/json` and `+json` types, `text` for
   * `text/*`, `binary` for everything else.
   */
  encoding?: StreamEncoding;
  /**
   * Sliding time to live in milliseconds: the stream expires `ttlMs` after its last activity
   * (creation, append, settle, {@link Streams.touch}). A settled stream therefore expires `ttlMs`
   * after it settled — unless `settledTtlMs` is given.
   */
  ttlMs?: number;
  /**
   * Time to live once the stream has settled, in milliseconds, counted from the settlement (and
   * from any later {@link Streams.touch}). It replaces `ttlMs` for a settled stream, so a stream
   * can live long while it streams and go soon after it ends (or the other way round). Without
   * it, `ttlMs` goes on applying after settlement.
   */
  settledTtlMs?: number;
  /** Absolute expiry (epoch milliseconds or a Date). With `ttlMs` too, the earlier of the two wins. */
  expiresAt?: number | Date;
  /** Write as this producer: writes are fenced by epoch and deduplicated by `producerSeq`. */
  producer?: StreamProducer;
}

/** Options of a single append. */
export interface StreamAppendOptions {
  /**
   * The producer's sequence number for this write (≥ 0, one per write, starting at 0 in each epoch).
   * A number at or below the last accepted one is a duplicate: nothing is written and the original
   * result comes back. Defaults to the next number when the writer has a producer.
   */
  producerSeq?: number;
  /**
   * Application-level ordering token (the protocol's `Stream-Seq`): must sort after the stream's
   * previous one, compared as JavaScript strings.
   */
  writerSeq?: string;
}

/** Options of `close()` and `error()`: a final write committed atomically with the settlement. */
export interface StreamSettleOptions extends StreamAppendOptions {
  /** Chunks appended in the same transaction as the settlement; readers see them, then the end. */
  chunks?: readonly StreamValue[];
}

/** What a write did. */
export interface StreamWriteResult {
  /** Seq of the first chunk this write stored (or, for a duplicate, the original write stored); null when none. */
  firstSeq: number | null;
  /** Seq of the last chunk, as `firstSeq`. */
  lastSeq: number | null;
  /** The stream's cursor (next seq) after the write. */
  cursor: number;
  /** True when the write was a producer retry: nothing was written. */
  duplicate: boolean;
  /** True when this call settled the stream. */
  settled: boolean;
  /** The stream's state after the write. */
  state: StreamState;
  /** For producer writes: the producer's epoch and highest accepted sequence number after the write. */
  producer?: { id: string; epoch: number; seq: number };
}

/** Options of {@link Streams.write}, the one-shot write a protocol handler uses. */
export interface StreamWriteOptions {
  /** Producer identity and this write's sequence number. */
  producer?: StreamProducer & { seq: number };
  writerSeq?: string;
  /** Settle the stream in the same transaction, after the chunks: `true` completes it, `{ error }` errors it. */
  settle?: true | { error: string | undefined };
}

/**
 * The producer handle {@link Streams.open} returns. Appends are synchronous and durable when they
 * return; a settled or deleted stream refuses them.
 */
export interface StreamWriter {
  readonly streamId: string;
  /** The next seq to be assigned (the stream's chunk count). */
  readonly cursor: number;
  /** True when this `open` created the stream. */
  readonly created: boolean;
  /** The producer this writer writes as, if any. */
  readonly producer: StreamProducer | undefined;
  /**
   * Appends one chunk, wakes live readers and returns its seq. Writes exactly one SQLite row.
   * @throws {StreamClosedError} `streams/closed` when the stream settled or was deleted.
   * @throws {StreamSerializationError} `streams/unserializable` / `streams/too-large`.
   * @throws {ProducerFencedError} `streams/fenced`; {@link ProducerSequenceError} on a sequence gap.
   */
  append(chunk: StreamValue, options?: StreamAppendOptions): number;
  /** Appends several chunks in one transaction (one row each) as one producer write. */
  appendMany(chunks: readonly StreamValue[], options?: StreamAppendOptions): StreamWriteResult;
  /**
   * Settles the stream as `completed`. Repeating it (or settling a stream that is already settled
   * or deleted) is a no-op that returns `settled: false`; readers are woken either way.
   */
  close(options?: StreamSettleOptions): StreamWriteResult;
  /** Settles the stream as `errored` with `reason`; same no-op contract as {@link close}. */
  error(reason?: string, options?: StreamSettleOptions): StreamWriteResult;
}

/** Options of {@link Streams.read}. */
export interface StreamReadOptions {
  /** First seq to yield (inclusive). Default 0. */
  from?: number;
  /** Ends a read, including one parked on the live tail, by throwing the signal's reason. */
  signal?: AbortSignal;
}

/** Options of {@link Streams.readBatches}. */
export interface StreamReadBatchesOptions extends StreamReadOptions {
  /** Maximum chunks per replayed batch. Default 100. */
  batchSize?: number;
  /**
   * Called once, the first time the reader has yielded every chunk stored so far (caught up, which
   * is not the same as ended). A synchronous append made inside it is not missed.
   */
  onUpToDate?: () => void;
  /**
   * Called once, just before the read ends because the stream went away under it (rather than
   * settled): `"expired"` when the retention sweep deleted it, `"deleted"` when `delete` did (or
   * when this isolate cannot tell).
   */
  onGone?: (reason: StreamGoneReason) => void;
}

/** Why a stream went away under a reader (see {@link StreamReadBatchesOptions.onGone}). */
export type StreamGoneReason = "deleted" | "expired";

/** Options of {@link Streams.readPage}. */
export interface StreamReadPageOptions {
  /** First seq to read (inclusive). Default 0. */
  from?: number;
  /** Most chunks to read, 1–1000. Default 100. */
  limit?: number;
  /**
   * `false` gives each chunk as stored instead of decoded: the JSON text of a `json` stream (what
   * `JSON.stringify` made of the appended value), the text of a `text` stream, the bytes of a
   * `binary` one. For a reader that forwards chunks (an HTTP or SSE response) without looking
   * inside them. Default true.
   */
  decode?: boolean;
}

/** One synchronous page of a stream, for catch-up reads. */
export interface StreamPage<T = unknown> {
  chunks: StreamChunk<T>[];
  /** The stream's cursor when the page was read. */
  cursor: number;
  /** The seq after the last chunk of the page: where the next page starts. */
  next: number;
  /** True when the page reaches the cursor (nothing more is stored right now). */
  upToDate: boolean;
  state: StreamState;
}

/** One chunk of {@link StreamImportOptions.chunks}: its value and the time it was written. */
export interface StreamImportChunk {
  chunk: StreamValue;
  /** When the chunk was written (epoch ms); not earlier than the previous chunk's. */
  at: number;
}

/**
 * Options of {@link Streams.importStream}: a stream written elsewhere (another store, an older
 * table), recreated with its chunks, timestamps and final state.
 */
export interface StreamImportOptions extends Omit<StreamOpenOptions, "producer"> {
  /** The state the stream ends in. Default `streaming` (an in-flight stream a writer reopens). */
  state?: StreamState;
  /** The reason of an errored stream. */
  error?: string;
  /** When the stream was created (epoch ms). Default: the first chunk's time, else now. */
  createdAt?: number;
  /**
   * The stream's last activity other than appends (epoch ms): its settlement for a settled stream.
   * Default: the newest chunk's time, else `createdAt`. A settled stream's `closedAt` is this time.
   */
  updatedAt?: number;
  /** The chunks in seq order (seq 0, 1, …). */
  chunks?: readonly StreamImportChunk[];
}

/** Status of one stream. */
export interface StreamStatus {
  streamId: string;
  state: StreamState;
  /** The next seq to be assigned: the number of chunks. */
  cursor: number;
  contentType: string;
  encoding: StreamEncoding;
  tag?: string;
  metadata?: Record<string, StreamJson>;
  /** The reason given to `error()`, for an errored stream. */
  error?: string;
  createdAt: number;
  /** Last activity: creation, latest append, settlement or touch. */
  updatedAt: number;
  closedAt?: number;
  ttlMs?: number;
  settledTtlMs?: number;
  /** When the stream expires, if it has a TTL or an absolute expiry. */
  expiresAt?: number;
}

/** Filters and paging of {@link Streams.list}; filters name fields of {@link StreamStatus}. */
export interface StreamListOptions {
  tag?: string;
  state?: StreamState | StreamState[];
  /** Page size, 1–1000. Default 100. */
  limit?: number;
  /** The `next` token of the previous page (opaque). */
  cursor?: string;
}

/** One page of {@link Streams.list}, newest stream first. */
export interface StreamList {
  items: StreamStatus[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next: string | null;
}

/** Options of {@link Streams.delete}. */
export interface StreamDeleteOptions {
  /** Delete even a live stream; its tailing readers end. */
  force?: boolean;
}

/**
 * Lifecycle events, delivered synchronously to `onEvent` (appends coalesced per microtask). A
 * listener that throws is reported with `console.warn` and the event dropped; the write stands.
 */
export type StreamEvent =
  | { type: "stream:opened"; streamId: string; tag?: string }
  | { type: "stream:appended"; streamId: string; firstSeq: number; lastSeq: number; count: number }
  | { type: "stream:closed"; streamId: string; cursor: number }
  | { type: "stream:errored"; streamId: string; cursor: number; reason?: string }
  | { type: "stream:deleted"; streamId: string; forced: boolean }
  | { type: "stream:expired"; streamId: string };

/** Options of the {@link Streams} constructor. */
export interface StreamsOptions {
  /** Largest stored chunk in bytes (JSON text, UTF-8 text or raw bytes). Default 1 MiB. */
  maxChunkBytes?: number;
  /** Receives lifecycle events; a throwing listener is reported with `console.warn` and ignored. */
  onEvent?: (event: StreamEvent) => void;
  /** Most streams one `alarm()` sweep looks at (and deletes). Default 500. */
  maxSweepStreams?: number;
  /** Clock (epoch ms). Default `Date.now`; tests pass a controllable one. */
  now?: () => number;
}
