import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { advanceTime, isTestingError, testClockOf } from "../src/index";

const fresh = () => env.FIXTURE.getByName(`time-${crypto.randomUUID()}`);
const DAY = 86_400_000;

describe("advanceTime", () => {
  it("takes a run through a week's sleep, retry back-offs and an event timeout without waiting", async () => {
    const stub = fresh();
    const before = await testClockOf(stub);
    const { runId } = await runInDurableObject(stub, (o) => o.tasks.run("week@v1"));
    expect(await runInDurableObject(stub, (o) => o.tasks.get(runId))).toMatchObject({
      state: "waiting",
      reason: "sleep",
    });

    // Six days in, the run still sleeps: each wake sees the clock it would have seen.
    await advanceTime(stub, 6 * DAY);
    expect(await runInDurableObject(stub, (o) => o.tasks.get(runId)?.state)).toBe("waiting");

    const { now, alarms } = await advanceTime(stub, 3 * DAY);
    expect(now - before).toBeGreaterThanOrEqual(9 * DAY);
    // The sleep's wake, two retries an hour and two hours apart, the event timeout.
    expect(alarms).toBeGreaterThanOrEqual(4);
    expect(await runInDurableObject(stub, (o) => o.tasks.get(runId))).toMatchObject({
      state: "completed",
      result: { tries: 3, approval: "timed out", days: 8 },
    });
  });

  it("refuses a negative duration", async () => {
    await expect(advanceTime(fresh(), -1)).rejects.toSatisfy((error) =>
      isTestingError(error, "testing/invalid-argument"),
    );
  });
});
