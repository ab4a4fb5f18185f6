import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("cancellation", () => {
  it("cancels a parked run at once", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 60_000 });
      await fixture.until(runId, (s) => s === "waiting");
      expect(await fixture.tasks.cancel(runId, "not needed")).toBe(true);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "cancelled", reason: "not needed" });
      expect(fixture.tasks.nextWakeAt()).toBeNull();
      expect(await fixture.tasks.cancel(runId)).toBe(false);
      expect(await fixture.tasks.cancel("unknown")).toBe(false);
      expect(fixture.events.at(-1)).toMatchObject({ type: "task:cancelled", reason: "not needed" });
    });
  });

  it("aborts a live attempt through its signal and settles at the step boundary", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("blocked@v1");
      for (let i = 0; i < 100 && !fixture.executions().blocked; i++) await sleep(2);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "running" });
      expect(await fixture.tasks.cancel(runId, "stop")).toBe(true);
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "cancelled", reason: "stop" });
      expect(fixture.executions()).toEqual({ blocked: 1 });
    });
  });

  it("lets a cancel requested mid-step beat the park that follows", async () => {
    await inFixture(async (fixture) => {
      let release: () => void = () => {};
      const tasks = fixture.build({
        "park-after@v1": async (_input: undefined, step) => {
          // This step ignores its signal, so it finishes after the cancel; the sleep would park.
          await step.do("ignores", () => new Promise<void>((resolve) => (release = resolve)));
          await step.sleep("nap", 60_000);
        },
      });
      const { runId } = await tasks.run("park-after@v1");
      await sleep(5);
      expect(await tasks.cancel(runId)).toBe(true);
      release();
      const done = await fixture.settled(runId, tasks);
      expect(done.state).toBe("cancelled");
      expect(tasks.nextWakeAt()).toBeNull();
    });
  });
});
