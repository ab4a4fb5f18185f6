import type {
  StreamChunk,
  StreamPage,
  StreamReadBatchesOptions,
  StreamState,
  StreamStatus,
} from "@durablekit/streams";
import type { SseSource, SseSourceStatus } from "../source";
import type { ProtocolLog } from "./log";

/**
 * A read-only log the Durable Streams protocol can serve beside the object's `Streams`
 * (`DurableStreamsHandler`'s `sources` option): an {@link SseSource} with a synchronous page read —
 * the read shape of `Streams` (`status`, `readPage`, `readBatches`), which a run's events,
 * `tasks.events` of `@durablekit/tasks`, have. Each chunk is a JSON value.
 */
export interface DurableStreamsSource extends SseSource {
  readPage(
    id: string,
    options: { from: number; limit: number },
  ): {
    chunks: ReadonlyArray<{ seq: number; chunk: unknown }>;
    cursor: number;
    next: number;
    upToDate: boolean;
    state: string;
  };
}

/** A source's state in the protocol's words: errored, streaming, or settled (closed). */
function stateOf(status: Pick<SseSourceStatus, "state">): StreamState {
  if (status.state === "streaming" || status.state === "errored") return status.state;
  return "completed";
}

/** True when `value` has the reads of a {@link DurableStreamsSource}. */
export function isDurableStreamsSource(value: unknown): value is DurableStreamsSource {
  const source = value as Partial<Record<keyof DurableStreamsSource, unknown>> | null;
  return (
    typeof source === "object" &&
    source !== null &&
    typeof source.status === "function" &&
    typeof source.readPage === "function" &&
    typeof source.readBatches === "function"
  );
}

/**
 * A source seen as the protocol's log: JSON content, one incarnation per id (its `createdAt` is 0:
 * a source keeps no creation time), no TTL, and reads that never extend one (`touch` does nothing).
 */
export function sourceLog(source: DurableStreamsSource): ProtocolLog {
  return {
    status(streamId: string): StreamStatus | null {
      const status = source.status(streamId);
      if (status === null) return null;
      return {
        streamId,
        state: stateOf(status),
        cursor: status.cursor,
        contentType: "application/json",
        encoding: "json",
        ...(typeof status.error === "string" ? { error: status.error } : {}),
        createdAt: 0,
        updatedAt: 0,
      };
    },
    readPage<T = unknown>(streamId: string, options: { from?: number; limit?: number } = {}) {
      const page = source.readPage(streamId, {
        from: options.from ?? 0,
        limit: options.limit ?? 100,
      });
      return { ...page, chunks: [...page.chunks], state: stateOf(page) } as StreamPage<T>;
    },
    readBatches<T = unknown>(streamId: string, options: StreamReadBatchesOptions = {}) {
      const { from = 0, signal, batchSize, onUpToDate = () => {}, onGone = () => {} } = options;
      const batches = source.readBatches(streamId, {
        from,
        signal: signal ?? new AbortController().signal,
        ...(batchSize === undefined ? {} : { batchSize }),
        onUpToDate,
        onGone,
      });
      return (async function* () {
        for await (const batch of batches) yield [...batch] as StreamChunk<T>[];
      })();
    },
    touch: () => false,
  };
}
