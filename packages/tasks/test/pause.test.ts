import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { isTasksError, NonRetryableError, type TaskDefinitions, type Tasks } from "../src/index";
import { crashAndWake, freshFixture, inFixture, sleep } from "./helpers";

/** Polls `tasks.get(runId)` until its state is `state`. */
async function reach(tasks: Tasks<TaskDefinitions>, runId: string, state: string) {
  for (let i = 0; i < 1_000; i++) {
    const snapshot = tasks.get(runId);
    if (snapshot?.state === state) return snapshot;
    await sleep(5);
  }
  throw new Error(`run ${runId} never reached ${state}: ${JSON.stringify(tasks.get(runId))}`);
}

describe("pause and resume", () => {
  it("lets the step in flight finish and be journaled, runs nothing after it until resume, then runs the rest once", async () => {
    await inFixture(async (fixture) => {
      let release: () => void = () => {};
      const tasks = fixture.build({
        "four@v1": async (_input: undefined, step) => {
          await step.do("a", () => fixture.bump("a"));
          await step.do("b", async () => {
            fixture.bump("b");
            await new Promise<void>((resolve) => (release = resolve));
            return "b done";
          });
          await step.do("c", () => fixture.bump("c"));
          await step.do("d", () => fixture.bump("d"));
          return "done";
        },
      });
      const { runId } = await tasks.run("four@v1");
      for (let i = 0; i < 200 && !fixture.executions().b; i++) await sleep(2);
      expect(await tasks.pause(runId)).toBe(true);
      // Asked, not taken: the attempt runs on until its next step boundary.
      expect(tasks.get(runId)).toMatchObject({ state: "running", pauseRequested: true });
      release();
      const held = await reach(tasks, runId, "paused");
      expect(held).not.toHaveProperty("pauseRequested");
      expect(tasks.steps(runId)?.map((s) => [s.name, s.state, s.result])).toEqual([
        ["a", "completed", 1],
        ["b", "completed", "b done"],
      ]);
      expect(tasks.nextWakeAt()).toBeNull();
      await sleep(50);
      expect(fixture.executions()).toEqual({ a: 1, b: 1 });
      expect(tasks.attempts(runId)?.map((a) => [a.attempt, a.outcome, a.step])).toEqual([
        [1, "paused", "c"],
      ]);
      expect(fixture.events.filter((e) => e.type === "task:paused")).toEqual([
        { type: "task:paused", runId, definition: "four@v1", step: "c" },
      ]);

      expect(await tasks.resume(runId)).toBe(true);
      expect(await fixture.settled(runId, tasks)).toMatchObject({
        state: "completed",
        result: "done",
        attempt: 2,
      });
      expect(fixture.executions()).toEqual({ a: 1, b: 1, c: 1, d: 1 });
      expect(fixture.events.some((e) => e.type === "task:resumed" && e.runId === runId)).toBe(true);
    });
  });

  it("holds a parked run at once, with no wake, and keeps its sleep's first deadline across the resume", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 400 });
      const waiting = await fixture.until(runId, (s) => s === "waiting");
      const wakeAt = (waiting as { wakeAt: number }).wakeAt;
      expect(await fixture.tasks.pause(runId)).toBe(true);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "paused" });
      expect(fixture.tasks.nextWakeAt()).toBeNull();
      expect(await fixture.tasks.pause(runId)).toBe(true);
      expect(await fixture.tasks.resume(runId)).toBe(true);
      // The replay finds the sleep's deadline where it was and parks on it again.
      const again = await fixture.until(runId, (s) => s === "waiting");
      expect((again as { wakeAt: number }).wakeAt).toBe(wakeAt);
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed", result: "woke" });
      expect(fixture.executions()).toEqual({ before: 1, after: 1 });
      expect(Date.now()).toBeGreaterThanOrEqual(wakeAt);
    });
  });

  it("accepts a run paused: no attempt, no wake, listed and counted as paused, until resume", async () => {
    await inFixture(async (fixture) => {
      const receipt = await fixture.tasks.run("steps@v1", { n: 2 }, { paused: true });
      expect(receipt).toMatchObject({ accepted: true, state: "paused" });
      const { runId } = receipt;
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "paused", attempt: 0 });
      expect(fixture.tasks.nextWakeAt()).toBeNull();
      expect(fixture.tasks.list({ state: "paused" }).items.map((r) => r.runId)).toEqual([runId]);
      expect(fixture.tasks.countByState().byState.paused).toBe(1);
      await sleep(30);
      expect(fixture.executions()).toEqual({});
      expect(await fixture.tasks.resume(runId)).toBe(true);
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed", result: 1 });
      expect(await fixture.tasks.resume(runId)).toBe(false);
      expect(await fixture.tasks.pause(runId)).toBe(false);
    });
  });

  it("withdraws a pause the attempt has not taken yet, so the run goes on without being held", async () => {
    await inFixture(async (fixture) => {
      let release: () => void = () => {};
      const tasks = fixture.build({
        "two@v1": async (_input: undefined, step) => {
          await step.do("slow", () => new Promise<void>((resolve) => (release = resolve)));
          return step.do("next", () => fixture.bump("next"));
        },
      });
      const { runId } = await tasks.run("two@v1");
      await sleep(5);
      expect(await tasks.pause(runId)).toBe(true);
      expect(await tasks.resume(runId)).toBe(true);
      expect(tasks.get(runId)).not.toHaveProperty("pauseRequested");
      release();
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed", attempt: 1 });
      expect(fixture.events.some((e) => e.type === "task:paused")).toBe(false);
    });
  });

  it("cancels a paused run, and buffers an event for a paused run until the resumed replay takes it", async () => {
    await inFixture(async (fixture) => {
      const { runId: idle } = await fixture.tasks.run("steps@v1", { n: 1 }, { paused: true });
      expect(await fixture.tasks.cancel(idle, "not now")).toBe(true);
      expect(fixture.tasks.get(idle)).toMatchObject({ state: "cancelled", reason: "not now" });
      expect(await fixture.tasks.resume(idle)).toBe(false);

      const { runId } = await fixture.tasks.run("approval@v1", {});
      await fixture.until(runId, (s) => s === "waiting");
      expect(await fixture.tasks.pause(runId)).toBe(true);
      expect(await fixture.tasks.sendEvent(runId, "approve", { by: "ada" })).toBe("buffered");
      await sleep(30);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "paused" });
      expect(await fixture.tasks.resume(runId)).toBe(true);
      expect(await fixture.settled(runId)).toMatchObject({
        state: "completed",
        result: { approvedBy: "ada" },
      });
      expect(fixture.executions()).toEqual({ prepare: 1 });
    });
  });

  it("refuses malformed arguments with a coded error, and answers false for an unknown run", async () => {
    await inFixture(async (fixture) => {
      for (const call of [() => fixture.tasks.pause(""), () => fixture.tasks.resume(42 as never)]) {
        await expect(call()).rejects.toSatisfy((e) => isTasksError(e, "tasks/invalid-argument"));
      }
      await expect(
        fixture.tasks.run("steps@v1", { n: 1 }, { paused: "yes" as never }),
      ).rejects.toSatisfy(
        (e) =>
          isTasksError(e, "tasks/invalid-argument") && /paused must be a boolean/.test(String(e)),
      );
      expect(fixture.tasks.list().items).toEqual([]);
      expect(await fixture.tasks.pause("nobody")).toBe(false);
      expect(await fixture.tasks.resume("nobody")).toBe(false);
      // A definition's lens holds and lets go only its own runs.
      const { runId } = await fixture.tasks.run("steps@v1", { n: 1 }, { paused: true });
      expect(await fixture.tasks.handle("sleepy@v1").resume(runId)).toBe(false);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "paused" });
      const steps = fixture.tasks.handle("steps@v1");
      expect(await steps.resume(runId)).toBe(true);
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed" });
      expect(await steps.pause(runId)).toBe(false);
    });
  });
});

describe("a pause across a restart", { timeout: 20_000 }, () => {
  it("leaves a run whose attempt died before its boundary held, runs nothing until resume, then reruns the cut step", async () => {
    let stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("interruptible@v1");
      // Attempt 1 hangs inside "slow" for ever.
      for (let i = 0; i < 200 && !fixture.executions().slow; i++) await sleep(2);
      expect(await fixture.tasks.pause(runId)).toBe(true);
      return runId;
    }, stub);
    stub = await crashAndWake(stub);
    await inFixture(async (fixture) => {
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "paused", attempt: 1 });
      expect(fixture.tasks.nextWakeAt()).toBeNull();
      expect(fixture.tasks.attempts(runId)?.map((a) => a.outcome)).toEqual(["interrupted"]);
      expect(fixture.executions()).toEqual({ first: 1, slow: 1 });
    }, stub);
    // Nothing wakes it: another alarm (and a wait past the claim deadline) leaves it held.
    await sleep(400);
    await runDurableObjectAlarm(stub);
    await inFixture(async (fixture) => {
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "paused" });
      expect(await fixture.tasks.resume(runId)).toBe(true);
      expect(await fixture.settled(runId)).toMatchObject({
        state: "completed",
        result: { first: 1, slow: 2, last: 3 },
        attempt: 2,
      });
      expect(fixture.executions()).toEqual({ first: 1, slow: 2, last: 1 });
    }, stub);
  });
});

describe("what holding a run costs (SQLite cursor counters, index writes included)", () => {
  it("holds a parked run with one run-row statement and lets it go with one, and a held run owes no wake", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 60_000 });
      await fixture.until(runId, (s) => s === "waiting");
      const writesSince = (mark: number) =>
        fixture.counter.log
          .slice(mark)
          .filter((entry) => entry.cursor.rowsWritten > 0)
          .map((entry) => [
            entry.query.trim().split(/\s+/).slice(0, 2).join(" "),
            entry.cursor.rowsWritten,
          ]);
      const beforePause = fixture.counter.mark();
      expect(await fixture.tasks.pause(runId)).toBe(true);
      const pause = writesSince(beforePause);
      expect(fixture.tasks.nextWakeAt()).toBeNull();
      const beforeResume = fixture.counter.mark();
      expect(await fixture.tasks.resume(runId)).toBe(true);
      const resume = writesSince(beforeResume).slice(0, 2);
      // The run row and its entries in the state and definition indexes (its wake entry goes),
      // and the pause's event (one row of the run's log).
      expect(pause).toEqual([
        ["UPDATE dk_tasks_runs", 3],
        ["INSERT INTO", 1],
      ]);
      // The same, and its wake entry back; the claim that follows is any wake's.
      expect(resume).toEqual([
        ["UPDATE dk_tasks_runs", 4],
        ["INSERT INTO", 1],
      ]);
    });
  });
});

describe("pausing instead of failing when a step's retries are used up", () => {
  it("holds the run at the step with its last error; a resume runs the step once more, and pauses again if it fails", async () => {
    await inFixture(async (fixture) => {
      let broken = 3;
      const tasks = fixture.build(
        {
          "fragile@v1": async (_input: undefined, step) => {
            await step.do("a", () => fixture.bump("a"));
            const b = await step.do("b", ({ attempt }) => {
              fixture.bump("b");
              if (broken > 0) {
                broken--;
                throw new Error(`b failed on attempt ${attempt}`);
              }
              return attempt;
            });
            await step.do("c", () => fixture.bump("c"));
            return b;
          },
          "refused@v1": async (_input: undefined, step) =>
            step.do("x", () => {
              throw new NonRetryableError("declined");
            }),
        },
        { retries: { limit: 2, delayMs: 10, backoff: "constant", onExhausted: "pause" } },
      );
      const { runId } = await tasks.run("fragile@v1");
      await reach(tasks, runId, "paused");
      expect(fixture.executions()).toEqual({ a: 1, b: 2 });
      const attempts = tasks.attempts(runId) ?? [];
      expect(attempts.at(-1)).toMatchObject({
        outcome: "paused",
        step: "b",
        error: { message: "b failed on attempt 2" },
      });
      expect(tasks.nextWakeAt()).toBeNull();

      // Still broken: one more attempt, and the run is held again.
      expect(await tasks.resume(runId)).toBe(true);
      await reach(tasks, runId, "paused");
      expect(fixture.executions()).toEqual({ a: 1, b: 3 });
      // Fixed: the resume runs the step once more and the run goes on.
      expect(await tasks.resume(runId)).toBe(true);
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed", result: 4 });
      expect(fixture.executions()).toEqual({ a: 1, b: 4, c: 1 });

      // A non-retryable error fails the run whatever onExhausted says.
      const { runId: refused } = await tasks.run("refused@v1");
      expect(await fixture.settled(refused, tasks)).toMatchObject({
        state: "failed",
        error: { code: "tasks/non-retryable" },
      });
    });
  });

  it("refuses an onExhausted that is not fail or pause", async () => {
    await inFixture(async (fixture) => {
      expect(() => fixture.build({}, { retries: { onExhausted: "retry" as never } })).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
    });
  });
});
