import { describe, expect, it } from "vitest";
import { inFixture } from "./helpers";

describe("retention", () => {
  it("deletes a completed run's records when it was started with retain false", async () => {
    await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("steps@v1", { n: 3 }, { retain: false });
      for (let i = 0; i < 200 && fixture.tasks.get(runId); i++)
        await new Promise((r) => setTimeout(r, 5));
      expect(fixture.tasks.get(runId)).toBeNull();
      expect(fixture.tasks.steps(runId)).toBeNull();
      const left = state.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_steps WHERE run_id = ?", runId)
        .one().n;
      expect(left).toBe(0);
      expect(fixture.events.slice(-2).map((event) => event.type)).toEqual([
        "task:completed",
        "task:deleted",
      ]);
    });
  });

  it("keeps failed runs despite retain false", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("fatal@v1", undefined, { retain: false });
      expect(await fixture.settled(runId)).toMatchObject({ state: "failed" });
    });
  });

  it("deletes settled runs on request, by state and age, never live ones", async () => {
    await inFixture(async (fixture) => {
      const done = await fixture.tasks.run("steps@v1", { n: 1 }, { runId: "done" });
      await fixture.settled(done.runId);
      await fixture.tasks.run("sleepy@v1", { ms: 60_000 }, { runId: "parked" });
      await fixture.tasks.run("sleepy@v1", { ms: 60_000 }, { runId: "cancelled" });
      await fixture.tasks.cancel("cancelled");
      expect(() => fixture.tasks.delete({ state: ["waiting" as never] })).toThrow(
        /settled runs only/,
      );
      expect(fixture.tasks.delete({ settledBefore: 0 })).toBe(0);
      expect(fixture.tasks.delete({ state: ["cancelled"] })).toBe(1);
      expect(fixture.tasks.get("cancelled")).toBeNull();
      expect(fixture.tasks.delete()).toBe(1);
      expect(fixture.tasks.get("done")).toBeNull();
      expect(fixture.tasks.steps("done")).toBeNull();
      expect(fixture.tasks.get("parked")).toMatchObject({ state: "waiting" });
      expect(
        fixture.events.filter((event) => event.type === "task:deleted").map((e) => e.runId),
      ).toEqual(["cancelled", "done"]);
    });
  });
});
