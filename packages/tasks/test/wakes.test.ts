import { type AlarmPart, requestWake } from "@durablekit/compose";
import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("wakes", () => {
  it("is an AlarmPart: nextWakeAt and alarm() are the part's share of the object's alarm", async () => {
    await inFixture(async (fixture) => {
      fixture.manualWakes = true;
      const tasks = fixture.build(fixture.definitions());
      const part: AlarmPart = tasks;
      const { runId } = await tasks.run("sleepy@v1", { ms: 40 });
      await fixture.until(runId, (s) => s === "waiting");
      const snapshot = tasks.get(runId);
      expect(part.nextWakeAt()).toBe(snapshot?.state === "waiting" ? snapshot.wakeAt : -1);
      await sleep(45);
      await part.alarm();
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed" });
      expect(part.nextWakeAt()).toBeNull();
      // Safe to call when nothing is due.
      await part.alarm();
    });
  });

  it("arms the object's alarm itself at the claim deadline, through requestWake", async () => {
    await inFixture(async (fixture, state) => {
      const before = Date.now();
      const { runId } = await fixture.tasks.run("blocked@v1");
      // The claim backstop (claimTimeoutMs 300 in the fixture); run() returns once it is armed.
      const armed = await state.storage.getAlarm();
      expect(armed).toBeGreaterThanOrEqual(before + 300);
      expect(armed).toBeLessThanOrEqual(Date.now() + 300);
      await fixture.tasks.cancel(runId);
    });
  });

  it("moves the alarm earlier for a park's wake, never later", async () => {
    await inFixture(async (fixture, state) => {
      // A sleep shorter than the claim deadline: the alarm moves earlier, to the sleep's deadline.
      const short = await fixture.tasks.run("sleepy@v1", { ms: 200 });
      const parked = await fixture.until(short.runId, (s) => s === "waiting");
      const wakeAt = (parked.state === "waiting" ? parked.wakeAt : -1) as number;
      expect(await state.storage.getAlarm()).toBe(wakeAt);
      // A sleep far later than the armed alarm leaves it where it is.
      const long = await fixture.tasks.run("sleepy@v1", { ms: 60_000 });
      await fixture.until(long.runId, (s) => s === "waiting");
      expect(await state.storage.getAlarm()).toBeLessThanOrEqual(wakeAt);
      expect(await fixture.settled(short.runId)).toMatchObject({ state: "completed" });
    });
  });

  it("shares one alarm with another part: a later part never pushes the task's wake back", async () => {
    await inFixture(async (fixture, state) => {
      fixture.manualWakes = true;
      const tasks = fixture.build(fixture.definitions());
      // Another part (e.g. stream retention) that wants a wake in an hour and asks for it.
      const retention: AlarmPart = {
        nextWakeAt: () => Date.now() + 3_600_000,
        alarm: async () => {},
      };
      // The object's one Alarms drives the tasks and this part (a second Alarms is refused).
      fixture.otherPart = retention;
      const alarms = fixture.alarms;
      const { runId } = await tasks.run("sleepy@v1", { ms: 50 });
      await fixture.until(runId, (s) => s === "waiting");
      await requestWake(fixture.counter.state, Date.now() + 3_600_000);
      const snapshot = tasks.get(runId);
      const wakeAt = snapshot?.state === "waiting" ? snapshot.wakeAt : -1;
      expect(await state.storage.getAlarm()).toBe(wakeAt);
      await alarms.alarm();
      expect(await state.storage.getAlarm()).toBe(wakeAt);
      await sleep(55);
      await alarms.alarm();
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed" });
      await alarms.alarm();
      // Only the other part's wake is left.
      expect(await state.storage.getAlarm()).toBeGreaterThan(Date.now() + 3_000_000);
    });
  });

  it("extends the claim of an attempt still alive instead of starting a second one", async () => {
    await inFixture(async (fixture) => {
      fixture.manualWakes = true;
      const tasks = fixture.build({
        "long@v1": async (_input: undefined, step) =>
          step.do("slow", async () => {
            fixture.bump("slow");
            // Longer than the fixture's 300 ms claim timeout: the claim deadline passes mid-step.
            await sleep(500);
            return "done";
          }),
      });
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

  it("reads the time from the now option", async () => {
    await inFixture(async (fixture) => {
      fixture.manualWakes = true;
      const base = Date.now() + 86_400_000;
      const tasks = fixture.build(fixture.definitions(), { now: () => base });
      const { runId, createdAt } = await tasks.run("sleepy@v1", { ms: 1_000 });
      expect(createdAt).toBe(base);
      const parked = await fixture.until(runId, (s) => s === "waiting");
      expect(parked).toMatchObject({ state: "waiting", wakeAt: base + 1_000, updatedAt: base });
    });
  });
});
