/** One row of `dk_tasks_triggers`: how far a definition has taken a source's batches. */
export type TriggerRow = {
  definition: string;
  source: string;
  /** The end of the last batch taken: every position up to it has its run. */
  position: number;
  /** The run of that batch. */
  run_id: string;
  updated_at: number;
};

/** The SQL of `dk_tasks_triggers`: one statement per method. */
export class TriggerStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  get(definition: string, source: string): TriggerRow | null {
    return (
      this.#sql
        .exec<TriggerRow>(
          "SELECT * FROM dk_tasks_triggers WHERE definition = ? AND source = ?",
          definition,
          source,
        )
        .toArray()[0] ?? null
    );
  }

  /** Moves a source's position to the end of the batch a new run took. */
  advance(definition: string, source: string, position: number, runId: string, now: number): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_triggers (definition, source, position, run_id, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (definition, source) DO UPDATE SET
         position = excluded.position, run_id = excluded.run_id, updated_at = excluded.updated_at`,
      definition,
      source,
      position,
      runId,
      now,
    );
  }
}
