import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("wakes", () => {
  it("never arms the alarm itself; nextWakeAt and alarm() are the host's to compose", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build(fixture.definitions(), { armAlarm: undefined });
      const { runId } = await tasks.run("sleepy@v1", { ms: 40 });
      await fixture.until(runId, (s) => s === "waiting");
      expect(await state.storage.getAlarm()).toBeNull();
      const snapshot = tasks.get(runId);
      expect(tasks.nextWakeAt()).toBe(snapshot?.state === "waiting" ? snapshot.wakeAt : -1);
      await sleep(45);
      await tasks.alarm();
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed" });
      expect(tasks.nextWakeAt()).toBeNull();
      expect(await state.storage.getAlarm()).toBeNull();
    });
  });

  it("asks armAlarm for the claim deadline and each park's wake", async () => {
    await inFixture(async (fixture) => {
      const requests: number[] = [];
      const tasks = fixture.build(fixture.definitions(), {
        armAlarm: (at) => void requests.push(at),
      });
      const before = Date.now();
      const { runId } = await tasks.run("sleepy@v1", { ms: 60_000 });
      await fixture.until(runId, (s) => s === "waiting");
      const snapshot = tasks.get(runId);
      expect(requests).toHaveLength(2);
      // The claim backstop (claimTimeout 300 ms in the fixture), then the sleep's deadline.
      expect(requests[0]).toBeGreaterThanOrEqual(before + 300);
      expect(requests[1]).toBe(snapshot?.state === "waiting" ? snapshot.wakeAt : -1);
    });
  });

  it("shares one alarm with another part: the host arms the earliest wake of both", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build(fixture.definitions(), { armAlarm: undefined });
      const retention = { nextWakeAt: () => Date.now() + 30_000, alarm: async () => {} };
      const hostAlarm = async () => {
        await tasks.alarm();
        await retention.alarm();
        const next = [tasks.nextWakeAt(), retention.nextWakeAt()].filter((at) => at !== null);
        if (next.length > 0) await state.storage.setAlarm(Math.min(...(next as number[])));
      };
      const { runId } = await tasks.run("sleepy@v1", { ms: 50 });
      await fixture.until(runId, (s) => s === "waiting");
      await hostAlarm();
      const armed = await state.storage.getAlarm();
      const snapshot = tasks.get(runId);
      expect(armed).toBe(snapshot?.state === "waiting" ? snapshot.wakeAt : -1);
      await sleep(55);
      await hostAlarm();
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed" });
      // Only the other part's wake is left.
      expect(await state.storage.getAlarm()).toBeGreaterThan(Date.now() + 20_000);
    });
  });

  it("extends the claim of an attempt still alive instead of starting a second one", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build(
        {
          "long@v1": async (_input: undefined, step) =>
            step.do("slow", async () => {
              fixture.bump("slow");
              // Longer than the fixture's 300 ms claim timeout: the claim deadline passes mid-step.
              await sleep(500);
              return "done";
            }),
        },
        { armAlarm: undefined },
      );
      const { runId } = await tasks.run("long@v1");
      await sleep(350);
      const deadline = tasks.nextWakeAt() as number;
      await tasks.alarm();
      expect(tasks.nextWakeAt()).toBeGreaterThan(deadline);
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed", attempt: 1 });
      expect(fixture.executions()).toEqual({ slow: 1 });
      expect(fixture.events.some((event) => event.type === "task:attempt:interrupted")).toBe(false);
    });
  });
});
