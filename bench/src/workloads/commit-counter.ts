import { type CountingState, countingState, withOverrides } from "@durablekit/test-kit";

/**
 * A Durable Object state whose SQL is observed: rows written (test-kit's `countingState`) and, while
 * {@link CommitCounter.counting} is on, SQLite commits.
 *
 * workerd wraps the writes of one event-loop turn in one implicit transaction and commits it after
 * the turn; awaiting `storage.sync()` waits for that commit. So a commit is counted per *epoch*: the
 * first statement after the previous epoch closed opens one (and asks `storage.sync()` when its
 * commit lands), and the epoch closes when that commit has landed. An epoch counts as a commit when
 * its statements wrote at least one row. Statements run after a commit but before its `sync()`
 * resolves would land in the closing epoch (an undercount); the committed workloads report the
 * counter's figure for raw inserts with a `sync()` each, which must read 1.00 commits per insert.
 */
export class CommitCounter {
  /** Pass this to the part under test in place of the real state. */
  readonly state: DurableObjectState;
  /** The rows-written log the epochs index into. */
  readonly sql: CountingState;
  #storage: DurableObjectStorage;

  // ── Epochs ──
  /** Whether statements open epochs (off while a timed pass runs, so it carries no `sync()`). */
  #counting = false;
  /** Log index of the open epoch's first statement; null when no epoch is open. */
  #openFrom: number | null = null;
  /** The open epoch's close, once its commit lands; null when none is open. */
  #closing: Promise<void> | null = null;
  /** Closed epochs that wrote rows, as `[from, to)` log ranges. Invariant: ordered, disjoint. */
  readonly #commits: Array<[number, number]> = [];

  constructor(ctx: DurableObjectState) {
    this.#storage = ctx.storage;
    this.sql = countingState(ctx);
    const counted = this.sql.storage.sql;
    const sql = withOverrides(counted, {
      exec: (query: string, ...bindings: unknown[]) => {
        const cursor = counted.exec(query, ...bindings);
        if (this.#counting && this.#openFrom === null) this.#open(this.sql.log.length - 1);
        return cursor;
      },
    });
    this.state = withOverrides(this.sql.state, {
      storage: withOverrides(this.sql.storage, { sql }),
    });
  }

  /** Turns commit counting on (statements open epochs) or off. */
  set counting(on: boolean) {
    this.#counting = on;
  }

  /** A position in the log to count from. */
  mark(): number {
    return this.sql.mark();
  }

  /** Rows written since `mark`. */
  rowsWritten(mark: number): number {
    return this.sql.counts(mark).rowsWritten;
  }

  /**
   * Commits since `mark`: closed epochs with a row written at or after it. Waits for the open epoch
   * to close first.
   */
  async commits(mark: number): Promise<number> {
    while (this.#closing) await this.#closing;
    let commits = 0;
    for (const [from, to] of this.#commits) {
      if (to > mark && this.#wrote(Math.max(from, mark), to)) commits += 1;
    }
    return commits;
  }

  #open(from: number): void {
    this.#openFrom = from;
    // Asked at once, so this epoch's `sync()` is settled before any the code under test asks next.
    this.#closing = this.#storage.sync().then(() => this.#close());
  }

  #close(): void {
    const from = this.#openFrom ?? 0;
    const to = this.sql.log.length;
    if (this.#wrote(from, to)) this.#commits.push([from, to]);
    this.#openFrom = null;
    this.#closing = null;
  }

  #wrote(from: number, to: number): boolean {
    return this.sql.log.slice(from, to).some((entry) => entry.cursor.rowsWritten > 0);
  }
}
