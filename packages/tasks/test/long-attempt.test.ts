import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("a long attempt beside short wakes", () => {
  it("retries another run's step on time (30 retries of 50 ms, each within 500 ms) while a long step started by the alarm runs", async () => {
    await inFixture(async (fixture) => {
      const tries: number[] = [];
      let longEnded = 0;
      const tasks = fixture.build(
        {
          "long@v1": async (_input: undefined, step) =>
            step.do(
              "long",
              { retries: { limit: 2, delayMs: 20, backoff: "constant" } },
              async () => {
                // The first try fails at once, so the long one is started by the object's alarm.
                if (fixture.bump("long") === 1) throw new Error("first try fails");
                await sleep(4_000);
                longEnded = Date.now();
                return "done";
              },
            ),
          "flaky@v1": async (_input: undefined, step) =>
            step.do(
              "flaky",
              { retries: { limit: 31, delayMs: 50, backoff: "constant" } },
              async () => {
                tries.push(Date.now());
                if (tries.length <= 30) throw new Error(`try ${tries.length} fails`);
                return tries.length;
              },
            ),
        },
        // The engine's defaults for the claim (5 s); the fixture's own is 300 ms.
        { claimTimeoutMs: undefined },
      );
      const long = await tasks.run("long@v1");
      await fixture.until(long.runId, () => fixture.executions().long === 2, 2_000);
      const flaky = await tasks.run("flaky@v1");
      const settledFlaky = await fixture.settled(flaky.runId, tasks, 8_000);
      expect(settledFlaky).toMatchObject({ state: "completed", result: 31 });
      // Every retry came within 500 ms of the failure before it, though the alarm that started
      // the long step is still waiting for it (an object runs one alarm handler at a time).
      const gaps = tries.slice(1).map((at, index) => at - (tries[index] as number));
      expect(Math.max(...gaps)).toBeLessThan(500);
      expect(longEnded === 0 || longEnded > (tries[30] as number)).toBe(true);
      // The long step was neither cut off nor started again: its attempt kept its claim.
      expect(await fixture.settled(long.runId, tasks, 8_000)).toMatchObject({
        state: "completed",
        result: "done",
        attempt: 2,
      });
      expect(fixture.executions()).toMatchObject({ long: 2 });
    });
  });
});
