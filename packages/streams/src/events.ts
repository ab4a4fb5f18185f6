import type { StreamEvent } from "./types";

interface PendingAppend {
  streamId: string;
  firstSeq: number;
  lastSeq: number;
  count: number;
}

/**
 * Delivers lifecycle events to the host's `onEvent`. Appends are coalesced: every append a stream
 * gets in one synchronous run becomes one `stream:appended` event, delivered at the next microtask
 * or just before any other event, so events stay in commit order. Costs nothing without a listener.
 */
export class EventSink {
  readonly #listener: ((event: StreamEvent) => void) | undefined;
  readonly #pending = new Map<number, PendingAppend>();
  #scheduled = false;

  constructor(listener: ((event: StreamEvent) => void) | undefined) {
    this.#listener = listener;
  }

  /** Records appended seqs `firstSeq..lastSeq` of a stream. */
  appended(key: number, streamId: string, firstSeq: number, lastSeq: number): void {
    if (this.#listener === undefined) return;
    const pending = this.#pending.get(key);
    if (pending !== undefined && pending.lastSeq + 1 === firstSeq) {
      pending.lastSeq = lastSeq;
      pending.count += lastSeq - firstSeq + 1;
    } else {
      if (pending !== undefined) this.flush();
      this.#pending.set(key, { streamId, firstSeq, lastSeq, count: lastSeq - firstSeq + 1 });
    }
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  /** Emits an event after any pending appends. */
  emit(event: StreamEvent): void {
    if (this.#listener === undefined) return;
    this.flush();
    this.#deliver(event);
  }

  /** Delivers pending `stream:appended` events now. */
  flush(): void {
    this.#scheduled = false;
    if (this.#pending.size === 0) return;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) this.#deliver({ type: "stream:appended", ...p });
  }

  #deliver(event: StreamEvent): void {
    try {
      this.#listener?.(event);
    } catch {
      // A listener is an observer: its failure must not undo or fail a write that committed.
    }
  }
}
