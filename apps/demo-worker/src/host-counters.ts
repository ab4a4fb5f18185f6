import type { HostCounts } from "./host-counts";

const NAMES: readonly (keyof HostCounts)[] = [
  "creates",
  "starts",
  "waits",
  "revives",
  "revivedWaits",
  "targets",
  "disposals",
  "approvals",
  "spawns",
  "reads",
];

/** The counters of the demo host modules ({@link HostCounts}), per execution id (table made by `DemoHostModules`). */
export class HostCounters {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** Counts one `name` for `executionId`. */
  bump(executionId: string, name: keyof HostCounts): void {
    this.#sql.exec(
      "INSERT INTO demo_host_counters (execution_id, name, n) VALUES (?, ?, 1) ON CONFLICT (execution_id, name) DO UPDATE SET n = n + 1",
      executionId,
      name,
    );
  }

  /** The counts of one execution, or of all of them (every name present, 0 when never counted). */
  read(executionId?: string): HostCounts {
    const out = Object.fromEntries(NAMES.map((name) => [name, 0])) as unknown as HostCounts;
    const rows =
      executionId === undefined
        ? this.#sql.exec<{ name: keyof HostCounts; n: number }>(
            "SELECT name, SUM(n) AS n FROM demo_host_counters GROUP BY name",
          )
        : this.#sql.exec<{ name: keyof HostCounts; n: number }>(
            "SELECT name, n FROM demo_host_counters WHERE execution_id = ?",
            executionId,
          );
    for (const row of rows) {
      if (NAMES.includes(row.name)) out[row.name] = row.n;
    }
    return out;
  }
}
