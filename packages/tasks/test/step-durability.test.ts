import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

/** The journal rows SQLite holds for a run: what survives the object's death. */
function storedSteps(state: DurableObjectState, runId: string) {
  return state.storage.sql
    .exec<{ name: string; state: string }>(
      "SELECT name, state FROM dk_tasks_steps WHERE run_id = ? ORDER BY seq",
      runId,
    )
    .toArray();
}

/** Kills the object (its in-memory attempt is gone, storage stays) and replays at the claim deadline. */
async function dieAndReplay(
  name: string,
): Promise<DurableObjectStub<import("./fixtures/worker").Fixture>> {
  await abortAllDurableObjects();
  const stub = env.FIXTURE.getByName(name);
  // The claim deadline (300 ms in the fixture) is the backstop the alarm fires at.
  await sleep(350);
  await runDurableObjectAlarm(stub);
  return stub;
}

describe("step durability", () => {
  it("never runs a returned step again once non-step code awaited, and the run returns the token it acted on", async () => {
    const name = `t-${crypto.randomUUID()}`;
    const runId = await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("token@v1");
      for (let i = 0; i < 100 && fixture.notes().length === 0; i++) await sleep(5);
      await sleep(10);
      // What the snapshot and steps() report is what SQLite holds.
      expect(storedSteps(state, runId)).toEqual([
        { name: "a", state: "completed" },
        { name: "b", state: "completed" },
      ]);
      expect(fixture.tasks.steps(runId)?.map((step) => step.name)).toEqual(["a", "b"]);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "running", statusMessage: "b done" });
      return runId;
    }, env.FIXTURE.getByName(name));
    const stub = await dieAndReplay(name);
    await inFixture(async (fixture) => {
      const done = await fixture.settled(runId);
      const [first] = fixture.notes() as { token: string }[];
      expect(done).toMatchObject({ state: "completed", attempt: 2, result: first?.token });
      expect(fixture.executions()).toEqual({ a: 1, b: 1 });
    }, stub);
  });

  it("makes each of parallel steps durable on its own: a fast step runs once when a slow sibling dies", async () => {
    const name = `t-${crypto.randomUUID()}`;
    const runId = await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("race@v1");
      for (let i = 0; i < 100 && storedSteps(state, runId).length < 2; i++) await sleep(5);
      await sleep(20);
      expect(storedSteps(state, runId)).toEqual([
        { name: "fast", state: "completed" },
        { name: "slow", state: "running" },
      ]);
      return runId;
    }, env.FIXTURE.getByName(name));
    const stub = await dieAndReplay(name);
    await inFixture(async (fixture) => {
      expect(await fixture.settled(runId)).toMatchObject({
        state: "completed",
        result: ["F", "S"],
      });
      expect(fixture.executions()).toEqual({ fast: 1, slow: 2 });
    }, stub);
  });

  it("keeps a returned step's result when non-step code then throws a platform failure; replay completes the run", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("platform-after-step@v1");
      // Abandoned, never settled; the claim deadline replays it.
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", result: 1, attempt: 2 });
      expect(fixture.executions()).toEqual({ once: 1 });
      expect(fixture.errors).toEqual([]);
    });
  });
});
