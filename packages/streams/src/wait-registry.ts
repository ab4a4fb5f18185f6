import { ParkedWaiters } from "@durablekit/compose";

/**
 * Readers parked on a stream's live tail, in this isolate. A Durable Object runs in one isolate at
 * a time, so every reader of a live stream shares its producer's isolate; a reader that outlives
 * the isolate reconnects and replays from its cursor. A wake carries no data: the reader re-reads
 * storage, so a wake can never deliver a chunk that did not commit.
 *
 * Two counters let a reader skip storage reads that cannot find anything new: `version` moves on
 * every wake (any stream), `endings` on every wake that may end readers (settle, delete, expiry).
 * A reader that read its page at `version` v and sees v unchanged knows nothing was written since.
 */
export class WaitRegistry {
  readonly #parked = new ParkedWaiters<number>();
  version = 0;
  endings = 0;

  /** Parks `waiter` on `key` until the next {@link wake} of that key. */
  park(key: number, waiter: () => void): void {
    this.#parked.park(key, waiter);
  }

  /** Removes a waiter that gave up (its read aborted). */
  unpark(key: number, waiter: () => void): void {
    this.#parked.unpark(key, waiter);
  }

  /** Wakes every reader parked on `key`; `ending` when the stream settled or went away. */
  wake(key: number, ending: boolean): void {
    this.version += 1;
    if (ending) this.endings += 1;
    this.#parked.wake(key);
  }

  /** How many streams have parked readers, and how many readers are parked in all. */
  stats(): { streams: number; readers: number } {
    const { keys, waiters } = this.#parked.stats();
    return { streams: keys, readers: waiters };
  }
}
