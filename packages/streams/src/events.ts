import { createEmitter } from "@durablekit/compose";
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
 * Delivery goes through `createEmitter` of `@durablekit/compose`: a listener that throws never fails
 * the write that committed; its error is reported with `console.warn` and the event dropped.
 */
export class EventSink {
  readonly #listening: boolean;
  readonly #deliver: (event: StreamEvent) => void;
  readonly #pending = new Map<number, PendingAppend>();
  #scheduled = false;

  constructor(listener: ((event: StreamEvent) => void) | undefined) {
    this.#listening = listener !== undefined;
    this.#deliver = createEmitter("@durablekit/streams", listener);
  }

  /** Records appended seqs `firstSeq..lastSeq` of a stream. */
  appended(key: number, streamId: string, firstSeq: number, lastSeq: number): void {
    if (!this.#listening) return;
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
    if (!this.#listening) return;
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
}
