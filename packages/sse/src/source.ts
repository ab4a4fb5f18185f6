import type { StreamEncoding, StreamGoneReason } from "@durablekit/streams";

/**
 * Where a log served by {@link sseResponse} stands: a `Streams` log's `StreamStatus`, or the same
 * fields of another log.
 */
export interface SseSourceStatus {
  /** The seq the next chunk takes. */
  cursor: number;
  /** How each chunk is framed as `data:` (`json`: its JSON text). */
  encoding: StreamEncoding;
  /** `"errored"` ends the response with an error frame; any other settled state with `done`. */
  state: string;
  /** An errored log's reason. */
  error?: string | null;
}

/** What {@link sseResponse} asks of a log's `readBatches`. */
export interface SseSourceReadOptions {
  /** First seq to yield (inclusive). */
  from: number;
  /** Ends the read when the client goes away. */
  signal: AbortSignal;
  batchSize?: number;
  /** Called once, when the reader first has every chunk stored so far. */
  onUpToDate: () => void;
  /** Called once, just before the read ends because the log went away under it. */
  onGone: (reason: StreamGoneReason) => void;
}

/**
 * A log {@link sseResponse} can serve: `Streams` of `@durablekit/streams`, or any log with the same
 * read shape — `status` (null for an unknown id) and `readBatches` (replay from a seq, then tail,
 * in non-empty arrays of `{ seq, chunk }`, ending when the log settles) — such as a run's events,
 * `tasks.events` of `@durablekit/tasks`.
 */
export interface SseSource {
  status(id: string): SseSourceStatus | null;
  readBatches(
    id: string,
    options: SseSourceReadOptions,
  ): AsyncIterable<ReadonlyArray<{ seq: number; chunk: unknown }>>;
}
