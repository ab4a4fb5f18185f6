import { encode } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import { inFixture } from "./helpers";

/** Seeds `count` settled runs straight into the run table (accepting them through run() times the engine). */
function seed(sql: SqlStorage, count: number, definition: string, state: string, from: number) {
  sql.exec(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO dk_tasks_runs (run_id, definition, state, input, retain, attempt, result,
       created_at, updated_at, settled_at)
     SELECT printf('%s-%05d', ?, i), ?, ?, '0', 1, 1, ?, ? + i, ? + i, ? + i FROM n`,
    count,
    state,
    definition,
    state,
    encode("x".repeat(10_000)),
    from,
    from,
    from,
  );
}

describe("list() and countByState() read only what they answer", () => {
  it("reads no run for a state or definition that matches nothing, and a page's rows for one that does", async () => {
    await inFixture(async (fixture, state) => {
      seed(state.storage.sql, 2_000, "seeded@v1", "completed", 1_000);
      seed(state.storage.sql, 30, "seeded@v1", "failed", 500_000);
      const { counter, tasks } = fixture;
      const read = (fn: () => unknown) => {
        const mark = counter.mark();
        fn();
        return counter.counts(mark).rowsRead;
      };
      expect(read(() => tasks.list({ state: "cancelled" }))).toBe(0);
      expect(read(() => tasks.list({ definition: "nothing@v1" }))).toBe(0);
      expect(read(() => tasks.list({ definition: "seeded@v1", state: "pending" }))).toBe(0);
      // A page of 10 failed runs among 2,030 reads the page and the one row that says more follow.
      const failed = tasks.list({ state: "failed", limit: 10 });
      expect(failed.items.map((run) => run.state)).toEqual(Array(10).fill("failed"));
      expect(read(() => tasks.list({ state: "failed", limit: 10 }))).toBeLessThanOrEqual(2 * 11);
      // Two states merged newest first: the failed runs are newer than every completed one.
      const both = tasks.list({ state: ["completed", "failed"], limit: 40 });
      expect(both.items.slice(0, 30).every((run) => run.state === "failed")).toBe(true);
      expect(both.items.slice(30).every((run) => run.state === "completed")).toBe(true);
      const rest = tasks.list({
        state: ["completed", "failed"],
        limit: 40,
        cursor: both.next ?? "",
      });
      expect(rest.items[0]?.runId).toBe("completed-01990");
      // Without values a page carries no result.
      const facts = tasks.list({ state: "completed", limit: 2, values: false });
      expect(facts.items.map((run) => "result" in run)).toEqual([false, false]);
      expect(tasks.list({ state: "completed", limit: 1 }).items[0]).toHaveProperty("result");
    });
  });

  it("counts runs by state from the state index alone, each up to its bound", async () => {
    await inFixture(async (fixture, state) => {
      seed(state.storage.sql, 1_500, "seeded@v1", "completed", 1_000);
      seed(state.storage.sql, 3, "seeded@v1", "failed", 500_000);
      const mark = fixture.counter.mark();
      const counts = fixture.tasks.countByState();
      expect(counts).toEqual({
        byState: {
          queued: 0,
          pending: 0,
          running: 0,
          waiting: 0,
          paused: 0,
          completed: 1_000,
          failed: 3,
          cancelled: 0,
        },
        capped: ["completed"],
      });
      // 1,001 index entries of the completed runs and 3 of the failed ones: no run row.
      expect(fixture.counter.counts(mark).rowsRead).toBeLessThanOrEqual(1_001 + 3 + 8);
      expect(fixture.tasks.countByState({ max: 5_000 }).byState.completed).toBe(1_500);
      expect(() => fixture.tasks.countByState({ max: 0 })).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
    });
  });
});
