/** One row of `dk_tasks_flows`: a flow key's queue counter and rate window. */
export interface FlowRow {
  definition: string;
  flow_key: string;
  /** The last queue position given out (a run's `queue_seq`): start order within a priority. */
  seq: number;
  /** JSON array of the times of the key's latest starts (a rate limit's sliding window), oldest first. */
  starts: string | null;
  /** When the key's queue must be looked at again (a rate slot frees), or the row may go. */
  wake_at: number | null;
}

/** The states in which a run holds one of its flow key's slots. */
const IN_PROGRESS = "('pending', 'running', 'waiting', 'paused')";

/**
 * The SQL of flow control: `dk_tasks_flows` (one row per flow key with a queue or a rate window)
 * and the reads of `dk_tasks_runs` by flow key, each through `dk_tasks_runs_by_flow` (definition,
 * flow key, state, priority descending, queue position). A key's slots in use are counted from
 * the runs' states, never kept as a counter: a slot is freed by the write that settles its run,
 * so it is freed once, by construction.
 */
export class FlowStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** How many runs of the key hold a slot (pending, running, waiting or paused). */
  inProgress(definition: string, key: string): number {
    return (
      this.#sql
        .exec<{ n: number }>(
          `SELECT count(*) AS n FROM dk_tasks_runs INDEXED BY dk_tasks_runs_by_flow
           WHERE definition = ? AND flow_key = ? AND state IN ${IN_PROGRESS}`,
          definition,
          key,
        )
        .toArray()[0]?.n ?? 0
    );
  }

  /**
   * The key's queued runs that wait for a slot (not a debounce), first in line first: higher
   * priority, then start order. At most `limit`.
   */
  queued(definition: string, key: string, limit: number): string[] {
    return this.#sql
      .exec<{ run_id: string }>(
        `SELECT run_id FROM dk_tasks_runs INDEXED BY dk_tasks_runs_by_flow
         WHERE definition = ? AND flow_key = ? AND state = 'queued' AND queued_for != 'debounce'
         ORDER BY priority DESC, queue_seq LIMIT ?`,
        definition,
        key,
        limit,
      )
      .toArray()
      .map((row) => row.run_id);
  }

  /** The key's run still gathering calls (a debounce), if any. */
  debouncing(definition: string, key: string): { run_id: string; created_at: number } | undefined {
    return this.#sql
      .exec<{ run_id: string; created_at: number }>(
        `SELECT run_id, created_at FROM dk_tasks_runs INDEXED BY dk_tasks_runs_by_flow
         WHERE definition = ? AND flow_key = ? AND state = 'queued' AND queued_for = 'debounce'
         LIMIT 1`,
        definition,
        key,
      )
      .toArray()[0];
  }

  /** The key's row, if it has one. */
  get(definition: string, key: string): FlowRow | undefined {
    return this.#sql
      .exec<FlowRow & Record<string, SqlStorageValue>>(
        "SELECT * FROM dk_tasks_flows WHERE definition = ? AND flow_key = ?",
        definition,
        key,
      )
      .toArray()[0];
  }

  /** Writes the key's row (its queue counter, rate window and wake) whole. */
  put(row: FlowRow): void {
    this.#sql.exec(
      "INSERT OR REPLACE INTO dk_tasks_flows (definition, flow_key, seq, starts, wake_at) VALUES (?, ?, ?, ?, ?)",
      row.definition,
      row.flow_key,
      row.seq,
      row.starts,
      row.wake_at,
    );
  }

  /** Deletes the key's row (its queue is empty and its rate window has passed). */
  delete(definition: string, key: string): void {
    this.#sql.exec(
      "DELETE FROM dk_tasks_flows WHERE definition = ? AND flow_key = ?",
      definition,
      key,
    );
  }

  /** Keys whose wake is due, earliest first. */
  due(now: number, limit: number): Array<{ definition: string; flow_key: string }> {
    return this.#sql
      .exec<{ definition: string; flow_key: string }>(
        `SELECT definition, flow_key FROM dk_tasks_flows INDEXED BY dk_tasks_flows_by_wake
         WHERE wake_at IS NOT NULL AND wake_at <= ? ORDER BY wake_at LIMIT ?`,
        now,
        limit,
      )
      .toArray();
  }

  /** The earliest wake of any key, or null. */
  nextWakeAt(): number | null {
    return (
      this.#sql
        .exec<{ at: number | null }>(
          "SELECT min(wake_at) AS at FROM dk_tasks_flows WHERE wake_at IS NOT NULL",
        )
        .toArray()[0]?.at ?? null
    );
  }
}
