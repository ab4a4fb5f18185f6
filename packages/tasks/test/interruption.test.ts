import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { encode } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import { freshFixture, inFixture, sleep } from "./helpers";

describe("interruption and recovery", () => {
  it("reclaims an attempt with a dead generation and replays it with step.interrupted set", async () => {
    const stub = freshFixture();
    await inFixture(async (_fixture, state) => {
      // The durable state an isolate leaves when it dies inside step "slow": the run is claimed by
      // a generation nobody holds, "first" is journaled and names "slow" as the step after it.
      const now = Date.now();
      state.storage.sql.exec(
        `INSERT INTO dk_tasks_runs (run_id, definition, state, input, retain, attempt, generation,
           next_at, created_at, started_at, updated_at)
         VALUES ('dead', 'interruptible@v1', 'running', ?, 1, 1, 'dead-generation', ?, ?, ?, ?)`,
        encode(undefined),
        now - 1,
        now - 100,
        now - 100,
        now - 100,
      );
      state.storage.sql.exec(
        `INSERT INTO dk_tasks_steps (run_id, name, seq, kind, state, attempt, value, next_step, at)
         VALUES ('dead', 'first', 1, 'do', 'completed', 1, ?, 'slow', ?)`,
        encode(1),
        now - 50,
      );
      await state.storage.setAlarm(now);
    }, stub);
    await runDurableObjectAlarm(stub);
    await inFixture(async (fixture) => {
      const done = await fixture.settled("dead");
      expect(done).toMatchObject({
        state: "completed",
        attempt: 2,
        result: { first: 1, slow: 2, last: 3 },
      });
      expect(fixture.notes()).toEqual([{ attempt: 2, interrupted: { name: "slow", attempt: 1 } }]);
      expect(fixture.executions()).toEqual({ slow: 1, last: 1 });
      expect(fixture.events).toContainEqual({
        type: "task:attempt:interrupted",
        runId: "dead",
        definition: "interruptible@v1",
        attempt: 1,
        step: "slow",
      });
    }, stub);
  });

  it("takes the newest in-flight evidence: a step's running row after an older dangling next_step", async () => {
    const stub = freshFixture();
    await inFixture(async (_fixture, state) => {
      // "slow" was on its second attempt (its row says running) when the isolate died; an older row
      // names a step "ghost" that never got a row of its own.
      const now = Date.now();
      state.storage.sql.exec(
        `INSERT INTO dk_tasks_runs (run_id, definition, state, input, retain, attempt, generation,
           next_at, created_at, started_at, updated_at)
         VALUES ('dead', 'interruptible@v1', 'running', ?, 1, 1, 'dead-generation', ?, ?, ?, ?)`,
        encode(undefined),
        now - 1,
        now - 100,
        now - 100,
        now - 100,
      );
      state.storage.sql.exec(
        `INSERT INTO dk_tasks_steps (run_id, name, seq, kind, state, attempt, value, next_step, at)
         VALUES ('dead', 'first', 1, 'do', 'completed', 1, ?, 'ghost', ?),
                ('dead', 'slow', 2, 'do', 'running', 2, NULL, NULL, ?)`,
        encode(1),
        now - 50,
        now - 40,
      );
      await state.storage.setAlarm(now);
    }, stub);
    await runDurableObjectAlarm(stub);
    await inFixture(async (fixture) => {
      const done = await fixture.settled("dead");
      expect(done).toMatchObject({ state: "completed", result: { first: 1, slow: 3, last: 3 } });
      expect(fixture.notes()).toEqual([{ attempt: 2, interrupted: { name: "slow", attempt: 2 } }]);
      expect(fixture.executions()).toEqual({ slow: 1, last: 1 });
    }, stub);
  });

  it("recovers a run whose object was reset mid-step, through the alarm backstop", async () => {
    const name = `t-${crypto.randomUUID()}`;
    let stub = env.FIXTURE.getByName(name);
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("interruptible@v1");
      // Wait until "slow" is in flight (it hangs on attempt 1).
      for (let i = 0; i < 100 && (fixture.executions().slow ?? 0) === 0; i++) await sleep(5);
      expect(fixture.executions()).toEqual({ first: 1, slow: 1 });
      return runId;
    }, stub);
    // An abrupt reset, as a crash would do: the in-memory attempt is gone, storage stays.
    await abortAllDurableObjects();
    stub = env.FIXTURE.getByName(name);
    // The claim deadline (300 ms in the fixture) is the backstop the alarm fires at.
    await sleep(350);
    await runDurableObjectAlarm(stub);
    await inFixture(async (fixture) => {
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", result: { first: 1, slow: 2, last: 3 } });
      expect(fixture.executions()).toEqual({ first: 1, slow: 2, last: 1 });
      expect(fixture.notes()).toEqual([
        { attempt: 1, interrupted: null },
        { attempt: 2, interrupted: { name: "slow", attempt: 1 } },
      ]);
    }, stub);
  });

  it("never settles a run as failed on a platform failure; the claim deadline replays it", async () => {
    const stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("platform@v1");
      for (let i = 0; i < 100 && (fixture.executions()["flaky-io"] ?? 0) === 0; i++) await sleep(5);
      await sleep(20);
      // Abandoned, not failed: still claimed, waiting for its deadline.
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "running", attempt: 1 });
      expect(fixture.errors).toEqual([]);
      return runId;
    }, stub);
    const done = await inFixture((fixture) => fixture.settled(runId), stub);
    expect(done).toMatchObject({ state: "completed", result: "ok", attempt: 2 });
    await inFixture((fixture) => {
      expect(fixture.executions()).toEqual({ "flaky-io": 2 });
      expect(fixture.events).toContainEqual(
        expect.objectContaining({ type: "task:attempt:interrupted", step: "flaky-io" }),
      );
    }, stub);
  });
});
