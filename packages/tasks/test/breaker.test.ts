import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Fixture } from "./fixtures/worker";
import { inFixture, sleep } from "./helpers";

/**
 * Starts a run of `definition` on a fresh object and lets the object die three times in the
 * middle of the step counted as `counted` (the claim deadline replays the run after each death).
 */
async function dieThreeTimes(
  definition: keyof ReturnType<Fixture["definitions"]>,
  counted: string,
) {
  const name = `t-${crypto.randomUUID()}`;
  const stub = () => env.FIXTURE.getByName(name);
  const runId = await inFixture(async (fixture) => {
    const { runId } = await fixture.tasks.run(definition);
    return runId;
  }, stub());
  /** The run's `attemptsWithoutProgress` as each attempt runs (absent reads as 0). */
  const stalls: number[] = [];
  for (let death = 1; death <= 3; death++) {
    await inFixture(async (fixture) => {
      for (let i = 0; i < 200 && (fixture.executions()[counted] ?? 0) < death; i++) await sleep(5);
      expect(fixture.executions()).toEqual({ [counted]: death });
      stalls.push(fixture.tasks.get(runId)?.attemptsWithoutProgress ?? 0);
    }, stub());
    // The object dies in the middle of the step; its claim deadline replays the run.
    await abortAllDurableObjects();
    await sleep(350);
    await runDurableObjectAlarm(stub());
  }
  return { runId, stub, stalls };
}

describe("the breaker for attempts without progress", () => {
  it("fails a run whose object keeps dying inside the same step with tasks/too-many-attempts", async () => {
    const { runId, stub, stalls } = await dieThreeTimes("doomed@v1", "dies");
    // The run's snapshot counts the attempts that ended without progress as they pile up.
    expect(stalls).toEqual([0, 1, 2]);
    await inFixture(async (fixture) => {
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({
        state: "failed",
        attempt: 3,
        error: { code: "tasks/too-many-attempts" },
      });
      // Three attempts ran the step; the fourth claim failed the run instead of running it again.
      expect(fixture.executions()).toEqual({ dies: 3 });
      expect(fixture.errors.map((error) => (error as { code?: string }).code)).toEqual([
        "tasks/too-many-attempts",
      ]);
    }, stub());
  }, 20_000);

  it("counts calls recorded through a step journal as progress: a program that records calls before each death keeps its run going", async () => {
    const { runId, stub, stalls } = await dieThreeTimes("program-dies@v1", "program");
    expect(stalls).toEqual([0, 0, 0]);
    await inFixture(async (fixture) => {
      // Three deaths, each after one more recorded call: the fourth attempt runs and completes.
      expect(await fixture.settled(runId)).toMatchObject({
        state: "completed",
        attempt: 4,
        result: 4,
      });
      expect(fixture.executions()).toEqual({ program: 4 });
    }, stub());
  }, 20_000);

  it("fails a run whose attempts keep being abandoned, counting from the last journal progress", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("abandoned@v1");
      const done = await fixture.settled(runId);
      // Attempt 1 journaled "first" (progress); attempts 2, 3 and 4 journaled nothing.
      expect(done).toMatchObject({
        state: "failed",
        attempt: 4,
        error: { code: "tasks/too-many-attempts" },
      });
      expect(fixture.executions()).toEqual({ first: 1 });
      expect(fixture.events.filter((event) => event.type === "task:failed")).toHaveLength(1);
    });
  });

  it("lets four attempts in a row end without progress by default, and fails the run at the fifth claim", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build(fixture.definitions(), { maxAttemptsWithoutProgress: undefined });
      const { runId } = await tasks.run("abandoned@v1");
      const done = await fixture.settled(runId, tasks);
      // Attempt 1 journaled "first"; attempts 2 to 5 journaled nothing.
      expect(done).toMatchObject({
        state: "failed",
        attempt: 5,
        error: { code: "tasks/too-many-attempts" },
      });
    });
  });

  it("takes maxAttemptsWithoutProgress from the options", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build(fixture.definitions(), { maxAttemptsWithoutProgress: 1 });
      const { runId } = await tasks.run("abandoned@v1");
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({
        state: "failed",
        attempt: 2,
        error: { code: "tasks/too-many-attempts" },
      });
    });
  });
});
