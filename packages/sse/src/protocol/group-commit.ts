/** One queued write: the synchronous work, and how its request learns the outcome. */
interface PendingWrite {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** A write that ran: its outcome, answered only once the commit holding it is durable. */
type RanWrite =
  | { ok: true; value: unknown; pending: PendingWrite }
  | { ok: false; error: unknown; pending: PendingWrite };

/**
 * Group commit for the protocol's appends. A Durable Object commits the writes of one synchronous
 * run together (one implicit SQLite transaction); this turns that into one commit for many
 * requests: a write that arrives while no commit is in flight runs at once; writes that arrive
 * while one is in flight wait for it, then run back to back in one synchronous run, so they share
 * the next transaction and its one commit. Every write's outcome (its result or the error it threw)
 * is handed to its request only after `storage.sync()` says the commit holding it is durable.
 *
 * Each write is atomic on its own (a `Streams.write` either commits all it did or throws having
 * rolled its statements back), so a write that throws is answered with its error and never undoes or
 * delays the others of its group. Writes run in arrival order.
 */
export class GroupCommit {
  readonly #storage: DurableObjectStorage;
  /** Writes waiting for the commit in flight; run, in order, as the next group. */
  #queue: PendingWrite[] = [];
  /** True while a group's commit is in flight (and the groups queued behind it run). */
  #committing = false;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
  }

  /**
   * Runs `write` — at once when no commit is in flight, else with the group after it — and
   * resolves with its result (or rejects with what it threw) once its commit is durable.
   * @throws whatever `write` throws, or the storage failure that kept its commit from landing.
   */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#committing) void this.#drain();
    });
  }

  // ── Groups ──

  /** Runs the queued writes as groups, one commit each, until nothing is queued. */
  async #drain(): Promise<void> {
    this.#committing = true;
    try {
      while (this.#queue.length > 0) {
        const group = this.#queue;
        this.#queue = [];
        // One synchronous run: every write of the group lands in the same implicit transaction.
        const ran = group.map(GroupCommit.#runOne);
        let failure: { error: unknown } | null = null;
        try {
          await this.#storage.sync();
        } catch (error) {
          failure = { error };
        }
        // Invariant: no outcome is handed out before the commit that holds its write is durable.
        for (const outcome of ran) {
          if (failure !== null) outcome.pending.reject(failure.error);
          else if (outcome.ok) outcome.pending.resolve(outcome.value);
          else outcome.pending.reject(outcome.error);
        }
      }
    } finally {
      this.#committing = false;
    }
  }

  static #runOne(pending: PendingWrite): RanWrite {
    try {
      return { ok: true, value: pending.write(), pending };
    } catch (error) {
      return { ok: false, error, pending };
    }
  }
}
