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

describe("the handler's own clock", () => {
  it("a decision made by Date.now() before a two-day sleep is made again two days on", async () => {
    const stub = fresh();
    const start = await testClockOf(stub);
    const { runId } = await runInDurableObject(stub, (o) =>
      o.tasks.run("promote@v1", { deadline: start + DAY }),
    );
    await advanceTime(stub, 2 * DAY + 1_000);
    const snapshot = await runInDurableObject(stub, (o) => o.tasks.get(runId));
    // The replay after the sleep reads the handler's clock two days on, as in production: the
    // promotion decided before the sleep is undone, which a test on real time never shows.
    expect(snapshot).toMatchObject({ state: "completed", result: { eligible: false } });
    const at = (snapshot as { result: { at: number } }).result.at;
    expect(at - start).toBeGreaterThanOrEqual(2 * DAY);
    // Outside the handler, the isolate's clock is real time.
    const date = new Date();
    expect(Math.abs(Date.now() - date.getTime())).toBeLessThan(1_000);
    expect(start + 2 * DAY - Date.now()).toBeGreaterThan(DAY);
  });

  it("an object the handler calls keeps its own clock", async () => {
    const stub = fresh();
    await advanceTime(stub, 3 * DAY);
    const { runId } = await runInDurableObject(stub, (o) => o.tasks.run("two-clocks@v1"));
    await advanceTime(stub, 0);
    const run = await runInDurableObject(stub, (o) => o.tasks.get(runId));
    expect(run).toMatchObject({ state: "completed" });
    const { mine, theirs } = (run as { result: { mine: number; theirs: number } }).result;
    expect(mine - theirs).toBeGreaterThan(3 * DAY - 1_000);
    expect(Math.abs(theirs - Date.now())).toBeLessThan(60_000);
  });

  it("timers the handler awaits fire when the test clock passes them", async () => {
    const stub = fresh();
    const { runId } = await runInDurableObject(stub, (o) => o.tasks.run("poll@v1"));
    await advanceTime(stub, 2 * 60_000);
    expect(await runInDurableObject(stub, (o) => o.tasks.get(runId))).toMatchObject({
      state: "completed",
      result: { waited: expect.toSatisfy((ms: number) => ms >= 120_000 && ms < 180_000) },
    });
  });

  it("advanceTime right after run() lets the first step's I/O finish and drives the run", async () => {
    const stub = fresh();
    const { runId } = await runInDurableObject(stub, (o) => o.tasks.run("io-first@v1"));
    const { alarms } = await advanceTime(stub, DAY + 1_000);
    expect(await runInDurableObject(stub, (o) => o.tasks.get(runId))).toMatchObject({
      state: "completed",
      result: "fetched",
    });
    // The day's wake, not a thousand claim extensions.
    expect(alarms).toBeLessThan(5);
  });
});
