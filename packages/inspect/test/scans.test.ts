import { describe, expect, it } from "vitest";
import { inFixture } from "./helpers";

/** A value as the tasks codec stores it (`{ "json": … }` for plain JSON). */
const encode = (value: unknown) => JSON.stringify({ json: value });

/** Seeds `count` runs of `definition` in `state` straight into the run table, oldest first from `from`. */
function seed(
  sql: SqlStorage,
  options: { count: number; definition: string; state: string; from: number; result?: string },
): void {
  sql.exec(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO dk_tasks_runs (run_id, definition, state, input, retain, attempt, result,
       created_at, updated_at, settled_at)
     SELECT printf('%s-%06d', ?, i), ?, ?, ?, 1, 1, ?, ? + i, ? + i, ? + i FROM n`,
    options.count,
    options.state,
    options.definition,
    options.state,
    encode(null),
    encode(options.result ?? 0),
    options.from,
    options.from,
    options.from,
  );
}

/** Rows read and statements run by `read`, counted on the object's own SQL. */
function counted(
  state: DurableObjectState,
  read: () => unknown,
): { rowsRead: number; queries: string[] } {
  const sql = state.storage.sql;
  const exec = sql.exec.bind(sql);
  const cursors: Array<{ rowsRead: number }> = [];
  const queries: string[] = [];
  sql.exec = ((query: string, ...bindings: unknown[]) => {
    const cursor = exec(query, ...bindings);
    cursors.push(cursor);
    queries.push(query);
    return cursor;
  }) as typeof sql.exec;
  try {
    read();
  } finally {
    sql.exec = exec as typeof sql.exec;
  }
  return { rowsRead: cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0), queries };
}

describe("no view scans a table", () => {
  it("reads no run for a state or definition filter that matches nothing among 20,000 runs", async () => {
    await inFixture(({ inspector }, state) => {
      seed(state.storage.sql, {
        count: 20_000,
        definition: "seeded@v1",
        state: "completed",
        from: 1_000,
      });
      expect(counted(state, () => inspector.runs({ state: "cancelled" })).rowsRead).toBe(0);
      expect(counted(state, () => inspector.runs({ state: ["pending", "failed"] })).rowsRead).toBe(
        0,
      );
      expect(counted(state, () => inspector.runs({ definition: "nothing@v1" })).rowsRead).toBe(0);
      // A filter that matches: the page's 50 runs and the one that says more follow.
      const page = counted(state, () => inspector.runs({ definition: "seeded@v1" }));
      expect(page.rowsRead).toBeLessThanOrEqual(51);
      expect(
        inspector.runs({ definition: "seeded@v1", limit: 2 }).items.map((r) => r.runId),
      ).toEqual(["completed-020000", "completed-019999"]);
    });
  });

  it("answers a page of 100 runs with large results without reading a result", async () => {
    await inFixture(({ inspector }, state) => {
      seed(state.storage.sql, {
        count: 100,
        definition: "seeded@v1",
        state: "completed",
        from: 1_000,
        result: "r".repeat(100_000),
      });
      const { rowsRead, queries } = counted(state, () => inspector.runs({ limit: 100 }));
      expect(rowsRead).toBeLessThanOrEqual(101);
      // The page's statement leaves the value columns out: 10 MB of results are neither read nor decoded.
      const list = queries.filter((query) => /FROM dk_tasks_runs/.test(query));
      expect(list).toHaveLength(1);
      expect(list[0]).toMatch(/NULL AS result/);
      expect(list[0]).not.toMatch(/SELECT \*/);
      expect(JSON.stringify(inspector.runs({ limit: 100 })).length).toBeLessThan(64 * 1024);
    });
  });

  it("counts each state from the state index alone: a state older than the newest 1,000 runs is counted, and no run row is read", async () => {
    await inFixture(({ inspector }, state) => {
      // Ten failed runs, then 5,000 newer completed ones (with results the count never reads).
      seed(state.storage.sql, { count: 10, definition: "seeded@v1", state: "failed", from: 1_000 });
      seed(state.storage.sql, {
        count: 5_000,
        definition: "seeded@v1",
        state: "completed",
        from: 100_000,
        result: "r".repeat(1_000),
      });
      const { rowsRead, queries } = counted(state, () => inspector.overview());
      const runs = inspector.overview().runs;
      expect(runs).toEqual({
        byState: {
          queued: 0,
          pending: 0,
          running: 0,
          waiting: 0,
          paused: 0,
          completed: 1_000,
          failed: 10,
          cancelled: 0,
        },
        limit: 1_000,
        complete: false,
        capped: ["completed"],
      });
      // At most 1,001 entries of one state's index, 10 of another, the streams' list and the
      // fixture's one schedule.
      expect(rowsRead).toBeLessThanOrEqual(1_001 + 10 + 10 + 1);
      const runQueries = queries.filter((query) => /dk_tasks_runs/.test(query));
      expect(runQueries.every((query) => /INDEXED BY dk_tasks_runs_by_state/.test(query))).toBe(
        true,
      );
      expect(runQueries.some((query) => /result|SELECT \*/.test(query))).toBe(false);
    });
  });
});
