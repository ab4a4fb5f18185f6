import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("external events", () => {
  it("delivers an event sent after the run parked in waitForEvent", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("approval@v1", {});
      const parked = await fixture.until(runId, (s) => s === "waiting");
      expect(parked).toMatchObject({ reason: "event", eventType: "approve", wakeAt: null });
      // No timeout: nothing to wake for until the event comes.
      expect(fixture.tasks.nextWakeAt()).toBeNull();
      expect(await fixture.tasks.sendEvent(runId, "approve", { by: "ada" })).toBe("delivered");
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", result: { approvedBy: "ada" }, attempt: 2 });
      expect(fixture.executions()).toEqual({ prepare: 1 });
    });
  });

  it("buffers an event sent before the wait, and the wait consumes it", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "late-wait@v1": async (_input: undefined, step) => {
          await step.sleep("first", 60);
          const one = await step.waitForEvent<number>("one", { type: "n" });
          const two = await step.waitForEvent<number>("two", { type: "n", timeoutMs: 1_000 });
          return [one, two];
        },
      });
      const { runId } = await tasks.run("late-wait@v1");
      await fixture.until(runId, (s) => s === "waiting");
      expect(await tasks.sendEvent(runId, "n", 1)).toBe("buffered");
      expect(await tasks.sendEvent(runId, "n", 2)).toBe("buffered");
      await sleep(70);
      await fixture.alarm();
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({ state: "completed", result: [1, 2] });
      expect(tasks.steps(runId)).toMatchObject([
        { name: "first", kind: "sleep" },
        { name: "one", kind: "event", state: "completed", result: 1, eventType: "n" },
        { name: "two", kind: "event", state: "completed", result: 2 },
      ]);
    });
  });

  it("throws a coded timeout into the run when no event arrives in time", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("approval@v1", { timeout: 60 });
      const parked = await fixture.until(runId, (s) => s === "waiting");
      expect(parked).toMatchObject({ reason: "event", eventType: "approve" });
      await sleep(70);
      await fixture.alarm();
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({
        state: "completed",
        result: { timedOut: "tasks/event-timeout" },
      });
      expect(fixture.tasks.steps(runId)).toMatchObject([
        { name: "prepare", state: "completed" },
        { name: "approve", state: "failed", error: { code: "tasks/event-timeout" } },
      ]);
      // A late event is refused once the run settled.
      await expect(fixture.tasks.sendEvent(runId, "approve", {})).rejects.toMatchObject({
        code: "tasks/closed",
      });
    });
  });

  it("refuses events for unknown runs and unstorable payloads", async () => {
    await inFixture(async (fixture) => {
      await expect(fixture.tasks.sendEvent("nope", "approve")).rejects.toMatchObject({
        code: "tasks/not-found",
      });
      const { runId } = await fixture.tasks.run("approval@v1", {});
      await expect(fixture.tasks.sendEvent(runId, "approve", { f: () => 1 })).rejects.toMatchObject(
        {
          code: "tasks/unserializable",
        },
      );
    });
  });
});

describe("buffered events of settled runs", () => {
  /** Rows the event buffer holds for a run. */
  const buffered = (state: DurableObjectState, runId: string) =>
    state.storage.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_events WHERE run_id = ?", runId)
      .one().n;

  it("deletes a run's buffered events when it completes", async () => {
    await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 100 });
      await fixture.until(runId, (s) => s === "waiting");
      const big = "x".repeat(60_000);
      for (let i = 0; i < 200; i++) {
        expect(await fixture.tasks.sendEvent(runId, "unwaited", { i, big })).toBe("buffered");
      }
      expect(buffered(state, runId)).toBe(200);
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed" });
      expect(buffered(state, runId)).toBe(0);
    });
  }, 20_000);

  it("deletes a run's buffered events when it fails or is cancelled", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build({
        "fails@v1": async (_input: undefined, step) => {
          await step.sleep("nap", 50);
          throw new Error("boom");
        },
        "parks@v1": async (_input: undefined, step) => {
          await step.sleep("nap", 60_000);
        },
      });
      const failing = await tasks.run("fails@v1");
      const parked = await tasks.run("parks@v1");
      for (const { runId } of [failing, parked]) {
        await tasks.sendEvent(runId, "unwaited", 1);
        await tasks.sendEvent(runId, "unwaited", 2);
        expect(buffered(state, runId)).toBe(2);
      }
      expect(await fixture.settled(failing.runId, tasks)).toMatchObject({ state: "failed" });
      expect(buffered(state, failing.runId)).toBe(0);
      expect(await tasks.cancel(parked.runId, "no longer needed")).toBe(true);
      expect(buffered(state, parked.runId)).toBe(0);
    });
  });
});
