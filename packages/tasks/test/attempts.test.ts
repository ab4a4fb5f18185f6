import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { freshFixture, inFixture, sleep } from "./helpers";

describe("attempts()", () => {
  it("writes no attempt row for a run that settles in its first attempt: it is read from the run row", async () => {
    await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("steps@v1", { n: 3 });
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", attempt: 1 });
      const rows = state.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_attempts WHERE run_id = ?", runId)
        .one().n;
      expect(rows).toBe(0);
      const attempts = fixture.tasks.attempts(runId) ?? [];
      expect(attempts).toEqual([
        {
          attempt: 1,
          startedAt: expect.any(Number),
          endedAt: done?.state === "completed" ? done.settledAt : -1,
          outcome: "completed",
        },
      ]);
      expect(attempts[0]?.startedAt).toBeGreaterThanOrEqual(done?.createdAt ?? Infinity);
    });
  });

  it("records each attempt of a run that retried a step twice: its step, its error, the back-off", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("flaky@v1", { failures: 2 });
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", attempt: 3 });
      const attempts = fixture.tasks.attempts(runId) ?? [];
      expect(attempts.map((a) => [a.attempt, a.outcome, a.step ?? null])).toEqual([
        [1, "retry", "b"],
        [2, "retry", "b"],
        [3, "completed", null],
      ]);
      expect(attempts[0]?.error).toMatchObject({ message: "b failed on attempt 1" });
      expect(attempts[1]?.error).toMatchObject({ message: "b failed on attempt 2" });
      expect(attempts[2]?.error).toBeUndefined();
      // Each attempt ended before the next began, 20 ms of back-off apart (constant).
      for (let i = 1; i < attempts.length; i++) {
        const before = attempts[i - 1];
        expect(before?.endedAt).not.toBeNull();
        expect(
          (attempts[i]?.startedAt ?? 0) - (before?.endedAt ?? Infinity),
        ).toBeGreaterThanOrEqual(20);
      }
      expect(attempts[2]?.endedAt).toBe(done?.state === "completed" ? done.settledAt : -1);
      expect(fixture.tasks.history(runId)?.attempts).toEqual(attempts);
      expect(fixture.tasks.attempts("no-such-run")).toBeNull();
    });
  });

  it("records a sleep and an event wait as the steps the attempts parked at", async () => {
    await inFixture(async (fixture) => {
      const sleepy = (await fixture.tasks.run("sleepy@v1", { ms: 20 })).runId;
      const approval = (await fixture.tasks.run("approval@v1", {})).runId;
      await fixture.until(approval, (s) => s === "waiting");
      // While it waits, the attempt that parked it has ended and no other runs.
      expect(fixture.tasks.attempts(approval)?.map((a) => [a.outcome, a.step])).toEqual([
        ["event", "approve"],
      ]);
      await fixture.tasks.sendEvent(approval, "approve", { by: "ada" });
      await fixture.settled(approval);
      await fixture.settled(sleepy);
      expect(fixture.tasks.attempts(sleepy)?.map((a) => [a.outcome, a.step ?? null])).toEqual([
        ["sleep", "nap"],
        ["completed", null],
      ]);
      expect(fixture.tasks.attempts(approval)?.map((a) => a.outcome)).toEqual([
        "event",
        "completed",
      ]);
    });
  });

  it("marks an attempt the object died under as interrupted when the next one takes the run", async () => {
    let stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("interruptible@v1");
      // Attempt 1 hangs inside "slow": it is running, with no end.
      await fixture.until(runId, (s) => s === "running");
      expect(fixture.tasks.attempts(runId)?.map((a) => [a.attempt, a.outcome])).toEqual([
        [1, "running"],
      ]);
      return runId;
    }, stub);
    await abortAllDurableObjects();
    // A stub connected to an aborted object stays broken: reach the object anew.
    stub = env.FIXTURE.get(stub.id);
    await sleep(350);
    await runDurableObjectAlarm(stub);
    await inFixture(async (fixture) => {
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed", attempt: 2 });
      const attempts = fixture.tasks.attempts(runId) ?? [];
      expect(attempts.map((a) => [a.attempt, a.outcome, a.endedAt === null])).toEqual([
        [1, "interrupted", true],
        [2, "completed", false],
      ]);
    }, stub);
  });
});
