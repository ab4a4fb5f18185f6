import { describe, expect, it } from "vitest";
import { isTasksError, RunTimeoutError } from "../src/index";
import { inFixture, sleep } from "./helpers";

describe("a deadline for the whole run", () => {
  it("fails a run whose deadline passes during a sleep, at the deadline, without running what follows", async () => {
    await inFixture(async (fixture) => {
      const acceptedAt = Date.now();
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 60_000 }, { deadlineMs: 300 });
      const waiting = await fixture.until(runId, (s) => s === "waiting");
      const deadlineAt = waiting.deadlineAt as number;
      expect(deadlineAt - acceptedAt).toBeGreaterThanOrEqual(300);
      expect(deadlineAt - acceptedAt).toBeLessThan(400);
      // The sleep's wake is the deadline, not a minute away: the run costs one alarm, there.
      expect(waiting).toMatchObject({ state: "waiting", wakeAt: deadlineAt });
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "failed", error: { code: "tasks/run-timeout" } });
      expect((done as { settledAt: number }).settledAt).toBeGreaterThanOrEqual(deadlineAt);
      expect(fixture.executions()).toEqual({ before: 1 });
      expect(fixture.errors.map((e) => (e as { code?: string }).code)).toEqual([
        "tasks/run-timeout",
      ]);
      expect(fixture.tasks.nextWakeAt()).toBeNull();
    });
  });

  it("aborts the signal of a step in flight with a TimeoutError when the deadline passes", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "waits@v1": async (_input: undefined, step) =>
          step.do(
            "wait",
            ({ signal }) =>
              new Promise((_resolve, reject) => {
                signal.addEventListener("abort", () => {
                  fixture.note((signal.reason as Error).name);
                  reject(signal.reason);
                });
              }),
          ),
      });
      const { runId } = await tasks.run("waits@v1", undefined, { deadlineMs: 100 });
      expect(await fixture.settled(runId, tasks)).toMatchObject({
        state: "failed",
        error: { code: "tasks/run-timeout", name: "RunTimeoutError" },
      });
      expect(fixture.notes()).toEqual(["TimeoutError"]);
      expect(fixture.errors.at(-1)).toBeInstanceOf(RunTimeoutError);
    });
  });

  it("stops an attempt whose step outlives the deadline there and then: the step's signal aborts", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("blocked@v1", undefined, { deadlineMs: 250 });
      const running = await fixture.until(runId, (s) => s === "running");
      expect(running.deadlineAt).toBeTypeOf("number");
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "failed", error: { code: "tasks/run-timeout" } });
      expect(fixture.executions()).toEqual({ blocked: 1 });
      await sleep(50);
      expect(fixture.executions()).toEqual({ blocked: 1 });
    });
  });

  it("counts the time a run is held: a run resumed after its deadline fails at once, and a restart gives it another", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run(
        "steps@v1",
        { n: 2 },
        { paused: true, deadlineMs: 50 },
      );
      await sleep(80);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "paused" });
      expect(await fixture.tasks.resume(runId)).toBe(true);
      expect(await fixture.settled(runId)).toMatchObject({
        state: "failed",
        attempt: 0,
        error: { code: "tasks/run-timeout" },
      });
      expect(fixture.executions()).toEqual({});
      // Nothing was journaled; run a step of it to restart from.
      const { runId: second } = await fixture.tasks.run(
        "steps@v1",
        { n: 2, sleepMs: 60_000 },
        {
          deadlineMs: 200,
        },
      );
      expect(await fixture.settled(second)).toMatchObject({ error: { code: "tasks/run-timeout" } });
      await fixture.tasks.restart(second, { from: "nap", deadlineMs: 60_000 });
      const again = await fixture.until(second, (s) => s === "waiting");
      expect(again.deadlineAt).toBeGreaterThan(Date.now() + 50_000);
      await fixture.tasks.restart(second, { from: "nap" });
      expect(await fixture.until(second, (s) => s === "waiting")).not.toHaveProperty("deadlineAt");
    });
  });

  it("refuses a deadline that is not a positive number of milliseconds, and writes nothing", async () => {
    await inFixture(async (fixture) => {
      for (const deadlineMs of [0, -5, Number.NaN, "10", Number.POSITIVE_INFINITY]) {
        await expect(
          fixture.tasks.run("steps@v1", { n: 1 }, { deadlineMs: deadlineMs as never }),
        ).rejects.toSatisfy(
          (e) => isTasksError(e, "tasks/invalid-argument") && /deadlineMs/.test(String(e)),
        );
      }
      expect(fixture.tasks.list().items).toEqual([]);
    });
  });
});
