import type { StreamStatus } from "@durablekit/streams";
import type { ProtocolLog } from "./log";
import { readSlice, type Slice } from "./slice";
import { type WaitOutcome, waitForData } from "./wait";

/** How one live reader's wait for the tail ended: a read of what came, or why there is none. */
export type TailOutcome =
  | { kind: "read"; slice: Slice }
  /** The stream vanished between the wake and the read. */
  | { kind: "gone" }
  | { kind: "timeout" }
  | { kind: "aborted" };

/** The longest a shared wait parks without a reader's own deadline (each reader keeps its own). */
const SHARED_WAIT_MS = 2_147_483_647;

/** One wait on a stream's tail, shared by every reader parked at the same offset. */
interface SharedWait {
  readonly outcome: Promise<WaitOutcome | { error: unknown }>;
  readonly controller: AbortController;
  readers: number;
  settled: boolean;
}

/** Readers of one stream that woke and read together after one yield. */
interface ReadGroup {
  readonly requests: Array<{
    status: StreamStatus;
    from: number;
    maxBytes: number;
    resolve: (outcome: TailOutcome) => void;
  }>;
}

/**
 * The live SSE readers of one handler, by stream. An append wakes every reader parked on its
 * stream; answering each wake at once costs one storage read and one event per reader per append,
 * which at fan-out starves the appends themselves. So readers parked at the same offset share one
 * wait, and a woken reader first yields one macrotask: appends queued behind the wake commit, and
 * one read (shared by every reader of the stream at the same offset) and one event carry them all.
 *
 * Guarantees are those of a direct read: a wake carries no data, every read runs in one synchronous
 * block after the wake (so it sees only committed chunks, and the cursor and state it reports
 * describe exactly what it read), and each reader advances only from its own offset.
 */
export class LiveTails {
  readonly #streams: ProtocolLog;
  // ── Shared waits ──
  // Invariant: an entry is present only while unsettled and at least one reader waits on it.
  readonly #waits = new Map<string, SharedWait>();
  // ── Coalesced reads ──
  // Invariant: a group is present only while its one timer is pending; the timer reads them all.
  readonly #groups = new Map<string, ReadGroup>();

  constructor(streams: ProtocolLog) {
    this.#streams = streams;
  }

  /**
   * Waits until chunk `from` exists or the stream settles or goes away, then, one macrotask later,
   * reads from `from` up to `maxBytes`. Ends early with `timeout` after `timeoutMs` or `aborted`
   * when `signal` aborts.
   * @throws what the stream's wait throws beyond a missing stream (a storage failure).
   */
  async next(
    status: StreamStatus,
    from: number,
    maxBytes: number,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<TailOutcome> {
    if (signal.aborted) return { kind: "aborted" };
    const outcome = await this.#wait(status.streamId, from, timeoutMs, signal);
    if (outcome === "timeout" || outcome === "aborted") return { kind: outcome };
    return this.#readSoon(status, from, maxBytes);
  }

  #wait(
    streamId: string,
    from: number,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<WaitOutcome> {
    const key = `${from}\n${streamId}`;
    let shared = this.#waits.get(key);
    if (shared === undefined) {
      const controller = new AbortController();
      const entry: SharedWait = {
        controller,
        readers: 0,
        settled: false,
        outcome: waitForData(this.#streams, streamId, from, SHARED_WAIT_MS, controller.signal).then(
          (outcome) => outcome,
          (error: unknown) => ({ error }),
        ),
      };
      void entry.outcome.then(() => {
        entry.settled = true;
        if (this.#waits.get(key) === entry) this.#waits.delete(key);
      });
      this.#waits.set(key, entry);
      shared = entry;
    }
    const wait = shared;
    wait.readers += 1;
    return new Promise<WaitOutcome>((resolve, reject) => {
      let done = false;
      const finish = (outcome: WaitOutcome | { error: unknown }) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        wait.readers -= 1;
        // The last reader to leave an unsettled wait ends it (and its parked read).
        if (wait.readers === 0 && !wait.settled) {
          if (this.#waits.get(key) === wait) this.#waits.delete(key);
          wait.controller.abort();
        }
        if (typeof outcome === "object") reject(outcome.error);
        else resolve(outcome);
      };
      const onAbort = () => finish("aborted");
      const timer = setTimeout(() => finish("timeout"), Math.max(0, timeoutMs));
      signal.addEventListener("abort", onAbort, { once: true });
      void wait.outcome.then(finish);
    });
  }

  /**
   * Reads after one macrotask, together with every reader of the stream woken meanwhile: the reads
   * run in one synchronous block, and readers at the same offset share one read.
   */
  #readSoon(status: StreamStatus, from: number, maxBytes: number): Promise<TailOutcome> {
    return new Promise<TailOutcome>((resolve) => {
      const streamId = status.streamId;
      let group = this.#groups.get(streamId);
      if (group === undefined) {
        const fresh: ReadGroup = { requests: [] };
        this.#groups.set(streamId, fresh);
        setTimeout(() => this.#readGroup(streamId, fresh), 0);
        group = fresh;
      }
      group.requests.push({ status, from, maxBytes, resolve });
    });
  }

  #readGroup(streamId: string, group: ReadGroup): void {
    this.#groups.delete(streamId);
    // One synchronous block: no write can land between two reads of the group, so readers at the
    // same offset (and encoding) are answered by the same read.
    const reads = new Map<string, TailOutcome>();
    for (const { status, from, maxBytes, resolve } of group.requests) {
      const key = `${from} ${maxBytes} ${status.encoding} ${status.contentType}`;
      let outcome = reads.get(key);
      if (outcome === undefined) {
        try {
          outcome = { kind: "read", slice: readSlice(this.#streams, status, from, maxBytes) };
        } catch {
          outcome = { kind: "gone" };
        }
        reads.set(key, outcome);
      }
      resolve(outcome);
    }
  }
}
