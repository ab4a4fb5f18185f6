import {
  DurableKitError,
  type DurableKitErrorOptions,
  type ErrorCodeOf,
  errorGuard,
  schemaTooNewMessage,
} from "@durablekit/compose";

/**
 * Every error this package throws is a {@link StreamsError} with a stable string `code`. Codes are
 * part of the public contract (an HTTP layer maps them to status codes); messages are for people
 * and may change. Words shared with every durablekit package (`not-found`, `closed`, `conflict`,
 * `unserializable`, `too-large`, `invalid-argument`, `schema-too-new`, `storage`) mean the same
 * thing there; the producer and writer-sequence codes are this package's own.
 *
 * - `streams/not-found`: a read or `write` named a stream that does not exist (or expired).
 * - `streams/closed`: a write reached a settled, deleted or expired stream.
 * - `streams/conflict`: `open` of a live stream with another tag, content type, encoding, TTL or expiry;
 *   a second `Streams` over the same object (construct parts once, in the constructor).
 * - `streams/unserializable`: a chunk or metadata value has no form in the stream's encoding.
 * - `streams/too-large`: a chunk is over `maxChunkBytes`.
 * - `streams/fenced`: a producer epoch older than the stream has seen.
 * - `streams/producer-seq-gap`: a producer sequence number beyond the next one.
 * - `streams/producer-epoch-seq`: a new producer epoch that does not start at 0.
 * - `streams/writer-seq-regression`: a `writerSeq` not after the stream's last one.
 * - `streams/delete-live`: `delete` of a live stream without `force`.
 * - `streams/invalid-argument`: a malformed id, option or empty write; nothing was written.
 * - `streams/schema-too-new`: the tables were written by a newer version of this package.
 * - `streams/storage`: storage kept changing under a write (retryable).
 */
export type StreamsErrorCode = ErrorCodeOf<
  "streams",
  | "not-found"
  | "closed"
  | "conflict"
  | "unserializable"
  | "too-large"
  | "invalid-argument"
  | "schema-too-new"
  | "storage",
  "fenced" | "producer-seq-gap" | "producer-epoch-seq" | "writer-seq-regression" | "delete-live"
>;

/**
 * Base class of every error thrown by `@durablekit/streams` (a `DurableKitError` of
 * `@durablekit/compose`).
 *
 * `retryable` is derived from the code: only `streams/storage` is retryable as is. Every other error
 * needs a different call (another id, a settled stream, a newer epoch, the expected sequence
 * number), so callers treat it as terminal for the request at hand. `code` and the other fields are
 * own enumerable properties, so they survive Workers RPC.
 */
export class StreamsError extends DurableKitError<StreamsErrorCode> {
  static override readonly retryableCodes: readonly StreamsErrorCode[] = ["streams/storage"];
  override readonly name: string = "StreamsError";
  /** The stream the error is about, when there is one. */
  readonly streamId: string | undefined;

  constructor(
    code: StreamsErrorCode,
    message: string,
    options: DurableKitErrorOptions & { streamId?: string } = {},
  ) {
    super(code, message, options);
    this.streamId = options.streamId;
  }
}

/** True when `error` is a {@link StreamsError}, optionally with the given code. */
export const isStreamsError = errorGuard(StreamsError);

/** `read`, `readBatches` or `readPage` named a stream that does not exist (never opened, deleted or expired). */
export class StreamNotFoundError extends StreamsError {
  override readonly name: string = "StreamNotFoundError";
  constructor(streamId: string) {
    super(
      "streams/not-found",
      `Stream "${streamId}" does not exist (never opened, deleted or expired). Open it before reading, or probe with status() first.`,
      { streamId },
    );
  }
}

/**
 * A write reached a stream that no longer accepts writes: it settled (`completed`/`errored`), it
 * was deleted after the writer was made (`"deleted"`), or it expired (`"expired"`: its sliding TTL
 * or `expiresAt` passed, whether or not the sweep has deleted it yet). `cursor` is the stream's
 * final cursor when it settled.
 */
export class StreamClosedError extends StreamsError {
  override readonly name: string = "StreamClosedError";
  readonly state: "completed" | "errored" | "deleted" | "expired";
  readonly cursor: number | undefined;

  constructor(
    streamId: string,
    state: "completed" | "errored" | "deleted" | "expired",
    cursor?: number,
  ) {
    super(
      "streams/closed",
      state === "deleted" || state === "expired"
        ? `Stream "${streamId}" ${state === "deleted" ? "was deleted" : "has expired"}; open it again to start a new stream under this id.`
        : `Stream "${streamId}" is already settled as ${state}; it accepts no more writes. Read it, or delete it and open a new one.`,
      { streamId },
    );
    this.state = state;
    this.cursor = cursor;
  }
}

/** `open` named a live stream with a configuration (tag, content type, TTL, expiry) different from its own. */
export class StreamConfigConflictError extends StreamsError {
  override readonly name: string = "StreamConfigConflictError";
  /** The option that differs. */
  readonly field: string;

  constructor(streamId: string, field: string, existing: unknown, requested: unknown) {
    super(
      "streams/conflict",
      `Stream "${streamId}" exists with ${field} ${JSON.stringify(existing)}; refusing to reopen it with ${field} ${JSON.stringify(requested)}. Omit ${field} to reopen as is, or use another stream id.`,
      { streamId },
    );
    this.field = field;
  }
}

/**
 * A chunk or metadata value cannot be stored: it has no form in the stream's encoding
 * (`streams/unserializable`), or it is larger than `maxChunkBytes` (`streams/too-large`).
 */
export class StreamSerializationError extends StreamsError {
  override readonly name: string = "StreamSerializationError";
  constructor(
    code: "streams/unserializable" | "streams/too-large",
    message: string,
    streamId?: string,
    cause?: unknown,
  ) {
    super(code, message, { streamId, cause });
  }
}

/** A producer wrote with an epoch older than the one the stream has seen from it: a zombie, fenced off. */
export class ProducerFencedError extends StreamsError {
  override readonly name: string = "ProducerFencedError";
  readonly producerId: string;
  /** The epoch the stream holds for this producer; a new session must use a greater one. */
  readonly currentEpoch: number;
  readonly receivedEpoch: number;

  constructor(streamId: string, producerId: string, currentEpoch: number, receivedEpoch: number) {
    super(
      "streams/fenced",
      `Producer "${producerId}" on stream "${streamId}" used epoch ${receivedEpoch}, but epoch ${currentEpoch} has taken over; this writer is stale. Open with an epoch greater than ${currentEpoch} to write again.`,
      { streamId },
    );
    this.producerId = producerId;
    this.currentEpoch = currentEpoch;
    this.receivedEpoch = receivedEpoch;
  }
}

/**
 * A producer's sequence number does not follow on: a gap (`streams/producer-seq-gap`, with the
 * expected and received numbers), or a first write of a new epoch that does not start at 0
 * (`streams/producer-epoch-seq`).
 */
export class ProducerSequenceError extends StreamsError {
  override readonly name: string = "ProducerSequenceError";
  readonly producerId: string;
  readonly expectedSeq: number;
  readonly receivedSeq: number;

  constructor(
    code: "streams/producer-seq-gap" | "streams/producer-epoch-seq",
    streamId: string,
    producerId: string,
    expectedSeq: number,
    receivedSeq: number,
  ) {
    super(
      code,
      code === "streams/producer-seq-gap"
        ? `Producer "${producerId}" on stream "${streamId}" sent sequence ${receivedSeq}, but ${expectedSeq} is next; resend the missing writes in order.`
        : `Producer "${producerId}" on stream "${streamId}" started a new epoch at sequence ${receivedSeq}; a new epoch starts at 0.`,
      { streamId },
    );
    this.producerId = producerId;
    this.expectedSeq = expectedSeq;
    this.receivedSeq = receivedSeq;
  }
}

/** A write carried a `writerSeq` not greater than the stream's last one (the protocol's `Stream-Seq`). */
export class WriterSeqRegressionError extends StreamsError {
  override readonly name: string = "WriterSeqRegressionError";
  readonly lastWriterSeq: string;
  readonly receivedWriterSeq: string;

  constructor(streamId: string, lastWriterSeq: string, receivedWriterSeq: string) {
    super(
      "streams/writer-seq-regression",
      `Stream "${streamId}" last accepted writerSeq ${JSON.stringify(lastWriterSeq)}; ${JSON.stringify(receivedWriterSeq)} does not sort after it. Writer sequences must strictly increase.`,
      { streamId },
    );
    this.lastWriterSeq = lastWriterSeq;
    this.receivedWriterSeq = receivedWriterSeq;
  }
}

/** `delete` named a live stream without `force`. */
export class StreamLiveError extends StreamsError {
  override readonly name: string = "StreamLiveError";
  constructor(streamId: string) {
    super(
      "streams/delete-live",
      `Stream "${streamId}" is still streaming; close() or error() it first, or pass { force: true } to delete it anyway (tailing readers end).`,
      { streamId },
    );
  }
}

/** An argument is malformed (an empty id, a negative sequence, an unknown encoding, …). */
export class StreamsArgumentError extends StreamsError {
  override readonly name: string = "StreamsArgumentError";
  constructor(message: string, streamId?: string) {
    super("streams/invalid-argument", message, { streamId });
  }
}

/** The object's stream tables were written by a newer version of this package. */
export class StreamsSchemaError extends StreamsError {
  override readonly name: string = "StreamsSchemaError";
  constructor(found: number, supported: number) {
    super(
      "streams/schema-too-new",
      schemaTooNewMessage("streams", found, supported, "@durablekit/streams"),
    );
  }
}
