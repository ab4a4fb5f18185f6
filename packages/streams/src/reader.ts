import { decodeChunk } from "./codec";
import type { StreamsCore } from "./core";
import type { StreamChunk, StreamEncoding, StreamPage, StreamState } from "./types";

/** The stream a read resolved to when it started. Reads follow the key, not the id. */
export interface ReadTarget {
  key: number;
  streamId: string;
  encoding: StreamEncoding;
}

/** The error an aborted read throws: the signal's reason. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The read was aborted.", "AbortError");
}

function decodeRows(encoding: StreamEncoding, rows: [number, SqlStorageValue][]): StreamChunk[] {
  const chunks: StreamChunk[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index] as [number, SqlStorageValue];
    chunks[index] = { seq: row[0], chunk: decodeChunk(encoding, row[1]) };
  }
  return chunks;
}

/**
 * Replay-then-tail in batches. Each loop reads one page; a short page means the reader is at the
 * durable tail, where it reports `onUpToDate` once, ends when the stream settled (and is drained)
 * or vanished, and otherwise parks until the next append, settle or delete of the stream wakes it.
 * It parks only when no wake happened since its page read (appends made while the consumer held a
 * batch woke no one), and it reads the state only after an ending wake. The stream is resolved at
 * the first iteration (through `resolve`, shared by all reads of an instance, so a parked reader
 * holds no closure of its own), so a missing stream rejects the first `next()`.
 */
export async function* readBatchesOf(
  core: StreamsCore,
  resolve: (streamId: string, signal: AbortSignal | undefined) => ReadTarget,
  streamId: string,
  from: number,
  batchSize: number,
  signal: AbortSignal | undefined,
  onUpToDate: (() => void) | undefined,
): AsyncGenerator<StreamChunk[], void, undefined> {
  const { key, encoding } = resolve(streamId, signal);
  const { store, chunks, waits } = core;
  let next = from;
  let reachedTail = false;
  // The `endings` count at which the stream was last seen streaming (-1: not yet looked).
  let streamingAt = -1;
  let waiter: (() => void) | null = null;
  // One abort listener for the whole read, not one per park.
  const onAbort = () => waiter?.();
  signal?.addEventListener("abort", onAbort);
  try {
    for (;;) {
      if (signal?.aborted) throw abortReason(signal);
      const seen = waits.version;
      const rows = chunks.page(key, next, batchSize);
      if (rows.length > 0) {
        next = (rows[rows.length - 1] as [number, SqlStorageValue])[0] + 1;
        yield decodeRows(encoding, rows);
      }
      if (rows.length === batchSize) continue;
      if (!reachedTail) {
        reachedTail = true;
        // Application code: an append it makes synchronously moves `version`, so it is read below.
        onUpToDate?.();
      }
      if (waits.version !== seen) continue;
      if (streamingAt !== waits.endings) {
        const state = store.stateOf(key);
        if (state === null) return;
        if (state !== "streaming") {
          if (rows.length === 0) return;
          continue;
        }
        streamingAt = waits.endings;
      }
      // The signal may have fired while the consumer held the last batch (no one was parked then).
      if (signal?.aborted) throw abortReason(signal);
      await new Promise<void>((wake) => {
        waiter = wake;
        waits.park(key, wake);
      });
      if (waiter !== null) waits.unpark(key, waiter);
      waiter = null;
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    if (waiter !== null) waits.unpark(key, waiter);
  }
}

/** {@link readBatchesOf}, one chunk at a time. */
export async function* readOf(
  core: StreamsCore,
  resolve: (streamId: string, signal: AbortSignal | undefined) => ReadTarget,
  streamId: string,
  from: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<StreamChunk, void, undefined> {
  for await (const batch of readBatchesOf(core, resolve, streamId, from, 256, signal, undefined)) {
    for (const chunk of batch) {
      if (signal?.aborted) throw abortReason(signal);
      yield chunk;
    }
  }
}

/** One synchronous page from `from`, with the cursor and state read in the same synchronous block. */
export function readPageOf(
  core: StreamsCore,
  target: ReadTarget,
  from: number,
  limit: number,
  state: StreamState,
  cursor: number,
): StreamPage {
  const rows = core.chunks.page(target.key, from, limit);
  const chunks = decodeRows(target.encoding, rows);
  const last = chunks[chunks.length - 1];
  const next = last === undefined ? from : last.seq + 1;
  return { chunks, cursor, next, upToDate: next >= cursor, state };
}
