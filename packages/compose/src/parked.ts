/**
 * Callbacks parked on keys in this isolate until the key's next wake: what a tailing reader waits
 * on (a stream's chunks, a run's events). A wake carries no data, so a woken reader reads storage
 * again and can never see a write that did not commit. Each callback is called at most once.
 */
export class ParkedWaiters<Key> {
  readonly #waiters = new Map<Key, Set<() => void>>();

  /** Parks `waiter` on `key` until the next {@link wake} of that key. */
  park(key: Key, waiter: () => void): void {
    let set = this.#waiters.get(key);
    if (set === undefined) {
      set = new Set();
      this.#waiters.set(key, set);
    }
    set.add(waiter);
  }

  /** Removes a waiter that gave up (its read aborted); the last one removes its key's entry. */
  unpark(key: Key, waiter: () => void): void {
    const set = this.#waiters.get(key);
    if (set === undefined || !set.delete(waiter)) return;
    if (set.size === 0) this.#waiters.delete(key);
  }

  /** Calls and forgets every waiter parked on `key`. */
  wake(key: Key): void {
    const set = this.#waiters.get(key);
    if (set === undefined) return;
    this.#waiters.delete(key);
    for (const waiter of set) waiter();
  }

  /** How many keys have parked waiters, and how many waiters are parked in all. */
  stats(): { keys: number; waiters: number } {
    let waiters = 0;
    for (const set of this.#waiters.values()) waiters += set.size;
    return { keys: this.#waiters.size, waiters };
  }
}
