import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("generation fencing", () => {
  it("lets a superseded attempt unwind without writing", async () => {
    await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("usurped@v1");
      for (let i = 0; i < 100 && !fixture.executions().b; i++) await sleep(2);
      await sleep(20);
      expect(fixture.executions()).toEqual({ a: 1, b: 1 });
      // Step b's result and everything after it were fenced out; the usurper still holds the run.
      const run = state.storage.sql
        .exec<{ state: string; generation: string }>(
          "SELECT state, generation FROM dk_tasks_runs WHERE run_id = ?",
          runId,
        )
        .one();
      expect(run).toEqual({ state: "running", generation: "usurper" });
      expect(fixture.tasks.steps(runId)?.map((step) => step.name)).toEqual(["a"]);
      expect(fixture.events.map((event) => event.type)).not.toContain("task:completed");
      expect(fixture.events.map((event) => event.type)).not.toContain("task:failed");
    });
  });

  it("claims each attempt with a fresh generation and fences every write on it", async () => {
    await inFixture(async (fixture) => {
      const mark = fixture.counter.mark();
      const { runId } = await fixture.tasks.run("flaky@v1", { failures: 1 });
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed", attempt: 2 });
      const log = fixture.counter.log.slice(mark);
      const claims = log.filter((entry) =>
        /SET state = 'running', generation = \?/.test(entry.query),
      );
      const generations = claims.map((entry) => entry.bindings[0]);
      expect(generations).toHaveLength(2);
      expect(new Set(generations).size).toBe(2);
      // Every journal write and settle of an attempt names that attempt's generation.
      const fenced = log.filter(
        (entry) => /generation = \?\)?\s*(AND|$)/m.test(entry.query) && !claims.includes(entry),
      );
      expect(fenced.length).toBeGreaterThan(0);
      for (const entry of fenced) {
        expect(generations.some((generation) => entry.bindings.includes(generation))).toBe(true);
      }
    });
  });
});
