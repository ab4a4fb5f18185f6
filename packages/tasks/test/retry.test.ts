import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { freshFixture, inFixture, sleep } from "./helpers";

describe("retries", () => {
  it("parks a retrying step and replays without re-running completed steps", async () => {
    const stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("flaky@v1", { failures: 2 });
      const parked = await fixture.until(runId, (state) => state === "waiting");
      expect(parked).toMatchObject({ state: "waiting", reason: "retry", attempt: 1 });
      expect(fixture.tasks.steps(runId)).toMatchObject([
        { name: "a", state: "completed", attempt: 1 },
        { name: "b", state: "waiting", attempt: 1, error: { message: "b failed on attempt 1" } },
      ]);
      return runId;
    }, stub);
    // The real alarm wakes the run for each retry; every attempt replays "a" from the journal.
    const done = await inFixture((fixture) => fixture.settled(runId), stub);
    expect(done).toMatchObject({ state: "completed", result: ["A", "B3", "C"], attempt: 3 });
    await inFixture((fixture) => {
      expect(fixture.executions()).toEqual({ a: 1, b: 3, c: 1 });
      const retries = fixture.events.filter((event) => event.type === "task:step:retry");
      expect(retries.map((event) => event.type === "task:step:retry" && event.attempt)).toEqual([
        1, 2,
      ]);
      // A clean retry is not an interruption.
      expect(fixture.events.some((event) => event.type === "task:attempt:interrupted")).toBe(false);
    }, stub);
  });

  it("counts an application error carrying retryable: true toward the step's retries and fails the run", async () => {
    await inFixture(async (fixture) => {
      let calls = 0;
      const tasks = fixture.build({
        "upstream@v1": async (_input: undefined, step) =>
          step.do("call", { retries: { limit: 2, delayMs: 10, backoff: "constant" } }, () => {
            calls++;
            // AWS SDK errors and the bridge's own error records carry `retryable`.
            throw Object.assign(new Error("upstream 503"), { retryable: true });
          }),
      });
      const { runId } = await tasks.run("upstream@v1");
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({ state: "failed", error: { message: "upstream 503" } });
      expect(calls).toBe(2);
      expect(fixture.errors.map((error) => error.message)).toEqual(["upstream 503"]);
    });
  });

  it("fails the run when a replay rethrows a journaled step failure that carries retryable: true", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "rethrow@v1": async (_input: undefined, step) => {
          let failure: unknown;
          try {
            await step.do("call", { retries: { limit: 1 } }, () => {
              throw Object.assign(new Error("upstream 503"), { retryable: true });
            });
          } catch (error) {
            failure = error;
          }
          await step.sleep("nap", 10);
          throw failure;
        },
      });
      const { runId } = await tasks.run("rethrow@v1");
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({
        state: "failed",
        attempt: 2,
        error: { message: "upstream 503" },
      });
      expect(fixture.errors).toHaveLength(1);
    });
  });

  it("resumes a parked retry through runDurableObjectAlarm once it is due", async () => {
    const stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const tasks = fixture.tasks;
      const { runId } = await tasks.run("flaky@v1", { failures: 1 });
      await fixture.until(runId, (state) => state === "waiting");
      return runId;
    }, stub);
    await sleep(30);
    await runDurableObjectAlarm(stub);
    const done = await inFixture((fixture) => fixture.settled(runId), stub);
    expect(done).toMatchObject({ state: "completed", result: ["A", "B2", "C"] });
  });

  it("fails at once on NonRetryableError and reports it through onError", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("fatal@v1");
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({
        state: "failed",
        attempt: 1,
        error: {
          name: "NonRetryableError",
          message: "the card was declined",
          code: "tasks/non-retryable",
        },
      });
      expect(fixture.executions()).toEqual({ doomed: 1 });
      expect(fixture.errors).toHaveLength(1);
      expect(fixture.errors[0]).toMatchObject({
        name: "NonRetryableError",
        code: "tasks/non-retryable",
      });
      expect(fixture.tasks.steps(runId)).toMatchObject([
        { name: "doomed", state: "failed", attempt: 1 },
      ]);
    });
  });

  it("times out a step that ignores its abort signal and applies its retry limit", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("stubborn@v1");
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({
        state: "failed",
        error: { name: "StepTimeoutError", code: "tasks/step-timeout" },
      });
      expect(fixture.executions()).toEqual({ "ignores-signal": 2 });
    });
  });

  it("grows delays by the backoff and caps them at one day", async () => {
    const { retryDelay } = await import("../src/policy");
    const policy = { limit: 10, delayMs: 1_000, timeoutMs: 1, onExhausted: "fail" as const };
    expect([1, 2, 3].map((n) => retryDelay({ ...policy, backoff: "constant" }, n))).toEqual([
      1_000, 1_000, 1_000,
    ]);
    expect([1, 2, 3].map((n) => retryDelay({ ...policy, backoff: "linear" }, n))).toEqual([
      1_000, 2_000, 3_000,
    ]);
    expect([1, 2, 3].map((n) => retryDelay({ ...policy, backoff: "exponential" }, n))).toEqual([
      1_000, 2_000, 4_000,
    ]);
    expect(retryDelay({ ...policy, backoff: "exponential" }, 40)).toBe(86_400_000);
  });
});
