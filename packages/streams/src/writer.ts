import { type ChunkBody, encodeChunk } from "./codec";
import type { LiveEntry } from "./entry-cache";
import { StreamClosedError, StreamsArgumentError } from "./errors";
import { assertCounter, assertWriterSeq } from "./producer";
import type {
  StreamAppendOptions,
  StreamProducer,
  StreamSettleOptions,
  StreamValue,
  StreamWriteResult,
  StreamWriter,
} from "./types";

/** A write, as a writer and `Streams.write` describe it to the write path. */
export interface WriteRequest {
  bodies: ChunkBody[];
  producer?: { id: string; epoch: number; seq: number | "auto" | "fence-only" };
  writerSeq?: string;
  settle?: { state: "completed" | "errored"; reason: string | null };
}

/** Something holding an entry that the write path may replace with a fresh one (a writer). */
export interface EntryHolder {
  entry: LiveEntry;
}

/**
 * The port through which a {@link Writer} drives its `Streams`' write path: every effect a writer
 * has on storage, readers and events goes through these two calls.
 */
export interface WritePath {
  /**
   * The hot path of `append(chunk)` without options or producer: one fenced statement. Anything
   * unusual falls through to {@link WritePath.write}. Returns the chunk's seq.
   */
  appendOne(holder: EntryHolder, body: ChunkBody): number;
  /** One write (producer judgement, fenced inserts, optional settlement); retries a stale entry. */
  write(holder: EntryHolder, request: WriteRequest): StreamWriteResult;
}

/**
 * The writer `Streams.open` returns. It holds the stream's key, not its id: once the stream is
 * deleted, a writer can never reach a new stream opened later under the same id.
 */
export class Writer implements StreamWriter, EntryHolder {
  entry: LiveEntry;
  readonly created: boolean;
  readonly producer: StreamProducer | undefined;
  readonly #path: WritePath;
  readonly #maxChunkBytes: number;

  constructor(
    path: WritePath,
    entry: LiveEntry,
    created: boolean,
    producer: StreamProducer | undefined,
    maxChunkBytes: number,
  ) {
    this.#path = path;
    this.entry = entry;
    this.created = created;
    this.producer = producer === undefined ? undefined : { id: producer.id, epoch: producer.epoch };
    this.#maxChunkBytes = maxChunkBytes;
  }

  get streamId(): string {
    return this.entry.streamId;
  }

  get cursor(): number {
    return this.entry.cursor;
  }

  append(chunk: StreamValue, options?: StreamAppendOptions): number {
    const body = encodeChunk(this.entry.encoding, chunk, this.#maxChunkBytes, this.entry.streamId);
    if (options === undefined && this.producer === undefined)
      return this.#path.appendOne(this, body);
    const result = this.#path.write(this, this.#request([body], options, "auto"));
    if (result.firstSeq === null) {
      // A retry of a producer write that stored no chunk (it settled the stream).
      throw new StreamClosedError(
        this.entry.streamId,
        result.state === "errored" ? "errored" : "completed",
        result.cursor,
      );
    }
    return result.firstSeq;
  }

  appendMany(chunks: readonly StreamValue[], options?: StreamAppendOptions): StreamWriteResult {
    return this.#path.write(this, this.#request(this.#encode(chunks), options, "auto"));
  }

  close(options?: StreamSettleOptions): StreamWriteResult {
    return this.#settle({ state: "completed", reason: null }, options);
  }

  error(reason?: string, options?: StreamSettleOptions): StreamWriteResult {
    return this.#settle({ state: "errored", reason: reason ?? null }, options);
  }

  #settle(
    settle: NonNullable<WriteRequest["settle"]>,
    options: StreamSettleOptions | undefined,
  ): StreamWriteResult {
    const bodies = options?.chunks === undefined ? [] : this.#encode(options.chunks);
    // Without an explicit producerSeq a settle is fenced by epoch but consumes no sequence number,
    // so repeating close() stays a no-op.
    const request = this.#request(bodies, options, "fence-only");
    request.settle = settle;
    return this.#path.write(this, request);
  }

  #encode(chunks: readonly StreamValue[]): ChunkBody[] {
    const { encoding, streamId } = this.entry;
    if (!Array.isArray(chunks)) {
      throw new StreamsArgumentError("Chunks must be an array of values.", streamId);
    }
    return chunks.map((chunk) => encodeChunk(encoding, chunk, this.#maxChunkBytes, streamId));
  }

  #request(
    bodies: ChunkBody[],
    options: StreamAppendOptions | undefined,
    defaultSeq: "auto" | "fence-only",
  ): WriteRequest {
    const request: WriteRequest = { bodies };
    if (this.producer !== undefined) {
      const seq = options?.producerSeq;
      if (seq !== undefined) assertCounter(seq, "producerSeq", this.entry.streamId);
      request.producer = {
        id: this.producer.id,
        epoch: this.producer.epoch,
        seq: seq ?? defaultSeq,
      };
    } else if (options?.producerSeq !== undefined) {
      throw new StreamsArgumentError(
        "producerSeq needs a producer: open the stream with { producer: { id, epoch } }.",
        this.entry.streamId,
      );
    }
    if (options?.writerSeq !== undefined) {
      assertWriterSeq(options.writerSeq, this.entry.streamId);
      request.writerSeq = options.writerSeq;
    }
    return request;
  }
}
