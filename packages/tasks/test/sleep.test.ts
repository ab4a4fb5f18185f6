import { describe, expect, it } from "vitest";
import { inFixture, makeDue, sleep } from "./helpers";

describe("durable sleep", () => {
  it("keeps the first recorded deadline across replays and resumes after it", async () => {
    await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 250 });
      const parked = await fixture.until(runId, (s) => s === "waiting");
      if (parked.state !== "waiting") throw new Error("unreachable");
      expect(parked.reason).toBe("sleep");
      const deadline = parked.wakeAt as number;

      // A wake before the deadline replays the run: it parks again on the same deadline.
      await sleep(50);
      makeDue(state, runId);
      await fixture.alarm();
      const again = fixture.tasks.get(runId);
      expect(again).toMatchObject({
        state: "waiting",
        reason: "sleep",
        wakeAt: deadline,
        attempt: 2,
      });
      expect(fixture.tasks.nextWakeAt()).toBe(deadline);

      await sleep(Math.max(0, deadline - Date.now()) + 5);
      await fixture.alarm();
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", result: "woke", attempt: 3 });
      expect(Date.now()).toBeGreaterThanOrEqual(deadline);
      expect(fixture.executions()).toEqual({ before: 1, after: 1 });
      expect(fixture.tasks.steps(runId)).toMatchObject([
        { name: "before", state: "completed" },
        { name: "nap", kind: "sleep", state: "completed", wakeAt: deadline },
        { name: "after", state: "completed", result: "woke" },
      ]);
    });
  });

  it("passes a sleep whose deadline is already behind it without parking", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "late@v1": async (_input: undefined, step) => {
          await step.sleepUntil("past", new Date(Date.now() - 1_000));
          await step.sleep("zero", 0);
          return "on";
        },
      });
      const { runId } = await tasks.run("late@v1");
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed", attempt: 1 });
      expect(fixture.events.some((event) => event.type === "task:waiting")).toBe(false);
    });
  });
});
