import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isTasksError, Tasks } from "../src/index";
import { RECOVER_ORPHANS } from "../src/store/run-store";
import { sleep } from "./helpers";

type Stub = DurableObjectStub<import("./fixtures/recovery-objects").DefaultsObject>;

/** Calls a fresh stub until it answers (a restarted object refuses the call in flight). */
async function call<T>(stub: () => Stub, fn: (s: Stub) => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn(stub());
    } catch (error) {
      if (i > 50) throw error;
      await sleep(20);
    }
  }
}

/** Starts `slow@v1` (its step waits a minute), waits until the step is in flight, then restarts every object. */
async function cutMidStep(stub: () => Stub): Promise<{ runId: string; cutAt: number }> {
  const { runId } = await call(stub, (s) => s.start(60_000));
  for (let i = 0; (await call(stub, (s) => s.executions(runId))) === 0; i++) {
    if (i > 200) throw new Error("the step never started");
    await sleep(10);
  }
  await abortAllDurableObjects();
  return { runId, cutAt: Date.now() };
}

describe("recovery of an attempt cut by a restart", { timeout: 40_000 }, () => {
  it("resumes on the next request within 2 s, without waiting for a one-minute claim deadline", async () => {
    const name = `slow-${crypto.randomUUID()}`;
    const stub = (): Stub => env.SLOW_CLAIM.getByName(name) as unknown as Stub;
    const { runId } = await cutMidStep(stub);
    const requestedAt = Date.now();
    let seen = await call(stub, (s) => s.look(runId));
    for (let i = 0; seen.state !== "completed"; i++) {
      if (i > 150) throw new Error(`the run did not resume: ${JSON.stringify(seen)}`);
      await sleep(20);
      seen = await call(stub, (s) => s.look(runId));
    }
    // The second attempt started within 2 s of the request; its step ran again, once.
    expect(seen.attempts).toHaveLength(2);
    expect((seen.attempts[1] as number) - requestedAt).toBeLessThan(2_000);
    expect(await call(stub, (s) => s.executions(runId))).toBe(2);
  });

  it("resumes within 10 s with no request at all, with default options: the claim deadline is 5 s", async () => {
    const name = `defaults-${crypto.randomUUID()}`;
    const stub = (): Stub => env.DEFAULTS.getByName(name);
    const { runId: first } = await call(stub, (s) => s.start(60_000));
    // While the step runs, the object's alarm (its claim deadline) is at most 5 s away.
    const armed = await call(stub, (s) => s.alarmAt());
    expect((armed as number) - Date.now()).toBeLessThanOrEqual(5_000);
    for (let i = 0; (await call(stub, (s) => s.executions(first))) === 0; i++) {
      if (i > 200) throw new Error("the step never started");
      await sleep(10);
    }
    await abortAllDurableObjects();
    const cutAt = Date.now();
    // Nothing reaches the object: only its alarm can wake it.
    await sleep(9_000);
    const seen = await call(stub, (s) => s.look(first));
    expect(seen.state).toBe("completed");
    expect(seen.attempts).toHaveLength(2);
    expect((seen.attempts[1] as number) - cutAt).toBeLessThan(10_000);
    // A claim deadline is never more than claimTimeoutMs ahead, so the alarm that reclaims the
    // run comes about 5 s after the cut at most (the docs' "within about 5 s").
    expect((seen.attempts[1] as number) - cutAt).toBeLessThan(6_000);
  });

  it("finds the runs to recover through the index of running runs, not by reading every run", async () => {
    const stub = env.DEFAULTS.getByName(`plan-${crypto.randomUUID()}`);
    const plan = await runInDurableObject(stub, async (_instance, state) =>
      state.storage.sql
        .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${RECOVER_ORPHANS}`, 1, 1)
        .toArray()
        .map((row) => row.detail),
    );
    expect(plan.join(" ")).toContain("dk_tasks_runs_running");
  });

  it("refuses a second Tasks over the same object with tasks/conflict, naming the fix", async () => {
    const stub = env.DEFAULTS.getByName(`one-${crypto.randomUUID()}`);
    const result = await runInDurableObject(stub, async (instance, state) => {
      let caught: unknown;
      try {
        new Tasks(state, { definitions: {} });
      } catch (error) {
        caught = error;
      }
      // The object's own Tasks goes on.
      const { runId } = await instance.tasks.run("slow@v1", { ms: 1 });
      return { caught, runId };
    });
    expect(isTasksError(result.caught, "tasks/conflict")).toBe(true);
    expect((result.caught as Error).message).toContain(
      "This object already has a Tasks: construct parts once, in the constructor (this.tasks = new Tasks(ctx, { definitions })), and use that one for every request and call.",
    );
    expect(result.runId).toMatch(/^task_/);
  });
});
