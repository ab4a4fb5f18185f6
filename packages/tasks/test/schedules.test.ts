import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { anotherInstance } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isTasksError, Tasks } from "../src/index";
import { SCHEDULE_DAY, type ScheduleObject } from "./fixtures/flow-objects";

const MINUTE = 60_000;
const fresh = () => env.SCHEDULED.getByName(`sched-${crypto.randomUUID()}`);
const inHost = <T>(
  stub: DurableObjectStub<ScheduleObject>,
  fn: (host: ScheduleObject) => T | Promise<T>,
) => runInDurableObject(stub, fn);
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

/** Sets the clock to `at`, fires the alarm and lets the runs it started finish their steps. */
async function alarmAt(stub: DurableObjectStub<ScheduleObject>, at: number): Promise<void> {
  await inHost(stub, (host) => host.setClock(at));
  await runDurableObjectAlarm(stub);
  await inHost(stub, settle);
}

const schedule = (host: ScheduleObject, id: string) =>
  host.tasks.schedules().find((one) => one.scheduleId === id);

/** A deterministic pseudo-random sequence (the test is the same on every machine). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

describe("schedules", () => {
  it("starts exactly 288 runs for */5 over 24 simulated hours, with the object restarted at random points", async () => {
    let stub = fresh();
    const next = random(44);
    const end = SCHEDULE_DAY + 24 * 60 * MINUTE;
    let restarts = 0;
    for (let guard = 0; guard < 2_000; guard++) {
      const due = await inHost(stub, (host) => schedule(host, "every5")?.nextTickAt as number);
      if (due >= end) break;
      // The alarm comes at the tick, or up to 4 minutes late (never past the next tick).
      const at = due + Math.floor(next() * 4 * MINUTE);
      if (next() < 0.1) {
        // Killed before the tick is taken.
        await abortAllDurableObjects();
        stub = env.SCHEDULED.get(stub.id);
        restarts += 1;
      }
      await alarmAt(stub, at);
      if (next() < 0.1) {
        // Killed after the tick was taken, maybe before its run ran.
        await abortAllDurableObjects();
        stub = env.SCHEDULED.get(stub.id);
        restarts += 1;
        await alarmAt(stub, at + 1);
      }
    }
    expect(restarts).toBeGreaterThan(10);
    await alarmAt(stub, end - 1);
    await inHost(stub, (host) => {
      const runs = host.rows(
        "SELECT run_id, state, metadata FROM dk_tasks_runs WHERE definition = 'ticker' ORDER BY run_id",
      );
      expect(runs).toHaveLength(288);
      expect(runs.every((run) => run.state === "completed")).toBe(true);
      expect(runs[0]?.run_id).toBe("every5@2030-01-01T00:00:00.000Z");
      expect(runs.at(-1)?.run_id).toBe("every5@2030-01-01T23:55:00.000Z");
      expect(host.tasks.get(runs[1]?.run_id as string)?.metadata).toEqual({
        schedule: "every5",
        tickAt: SCHEDULE_DAY + 5 * MINUTE,
      });
      expect(schedule(host, "every5")).toMatchObject({
        missed: 0,
        skipped: 0,
        lastTickAt: end - 5 * MINUTE,
        nextTickAt: end,
        lastRunId: "every5@2030-01-01T23:55:00.000Z",
      });
    });
  }, 120_000);

  it("backfills at most `backfill` ticks after a 2-hour outage and counts the rest as missed", async () => {
    const stub = fresh();
    await alarmAt(stub, SCHEDULE_DAY);
    // Down from 00:00:30 to 02:01: the ticks of 00:05 … 02:00 (24) are due at once.
    await alarmAt(stub, SCHEDULE_DAY + 121 * MINUTE);
    await inHost(stub, (host) => {
      const bf3 = host.notes().filter((note) => note === "bf3");
      const bf0 = host.notes().filter((note) => note === "bf0");
      // The first tick, then the latest and the 3 before it.
      expect(bf3).toHaveLength(5);
      expect(bf0).toHaveLength(2);
      expect(schedule(host, "bf3")).toMatchObject({
        missed: 20,
        lastTickAt: SCHEDULE_DAY + 120 * MINUTE,
        nextTickAt: SCHEDULE_DAY + 125 * MINUTE,
      });
      expect(schedule(host, "bf0")).toMatchObject({ missed: 23 });
      expect(
        host
          .rows("SELECT run_id FROM dk_tasks_runs WHERE run_id LIKE 'bf3@%' ORDER BY run_id")
          .map((row) => row.run_id),
      ).toEqual([
        "bf3@2030-01-01T00:00:00.000Z",
        "bf3@2030-01-01T01:45:00.000Z",
        "bf3@2030-01-01T01:50:00.000Z",
        "bf3@2030-01-01T01:55:00.000Z",
        "bf3@2030-01-01T02:00:00.000Z",
      ]);
    });
  });

  it("counts at most 1,000 missed ticks per pass after a long outage", async () => {
    const stub = fresh();
    await alarmAt(stub, SCHEDULE_DAY);
    // Four days down: 1,151 ticks of */5 are due at once.
    await alarmAt(stub, SCHEDULE_DAY + 4 * 24 * 60 * MINUTE);
    await inHost(stub, (host) => {
      expect(schedule(host, "bf0")).toMatchObject({
        missed: 1_000,
        lastTickAt: SCHEDULE_DAY + 4 * 24 * 60 * MINUTE,
      });
      expect(schedule(host, "bf3")?.missed).toBe(1_000);
      expect(host.runsIn("backfilled", "completed")).toHaveLength(2 + 5);
    });
  });

  it("skips a tick while its last run is in progress (overlap skip), and queues it behind (overlap queue)", async () => {
    const stub = fresh();
    await alarmAt(stub, SCHEDULE_DAY);
    await alarmAt(stub, SCHEDULE_DAY + 5 * MINUTE);
    await inHost(stub, async (host) => {
      expect(host.runsIn("skipping", "waiting")).toHaveLength(1);
      expect(schedule(host, "skipper")).toMatchObject({ skipped: 1 });
      expect(host.runsIn("queueing", "waiting")).toHaveLength(1);
      const [queued] = host.runsIn("queueing", "queued");
      expect(host.tasks.get(queued as string)).toMatchObject({
        state: "queued",
        reason: "concurrency",
        key: "__dk:schedule:queuer",
      });
      await host.tasks.sendEvent(host.runsIn("queueing", "waiting")[0] as string, "go");
      await settle();
      expect(host.runsIn("queueing", "completed")).toHaveLength(1);
      expect(host.tasks.get(queued as string)?.state).toBe("waiting");
    });
  });

  it("starts a tick's run once even when its pass is taken again (the run is known by its id)", async () => {
    const stub = fresh();
    await alarmAt(stub, SCHEDULE_DAY);
    await inHost(stub, (host) => {
      // As if the schedule's next tick had not been written: the same tick is due again.
      host.rows(
        `UPDATE dk_tasks_schedules SET next_at = ${SCHEDULE_DAY} WHERE schedule_id = 'every5'`,
      );
    });
    await alarmAt(stub, SCHEDULE_DAY + 1);
    await inHost(stub, (host) => {
      expect(host.notes().filter((note) => note === "every5")).toHaveLength(1);
      expect(host.runsIn("ticker", "completed")).toHaveLength(1);
    });
  });

  it("ticks in the schedule's time zone", async () => {
    const stub = fresh();
    await inHost(stub, (host) => {
      // 09:00 in Paris in January is 08:00 UTC.
      expect(schedule(host, "paris9")?.nextTickAt).toBe(SCHEDULE_DAY + 8 * 60 * MINUTE);
      expect(schedule(host, "paris9")?.timezone).toBe("Europe/Paris");
    });
  });

  it("adds and removes schedules at run time, and refuses malformed ones with nothing written", async () => {
    const stub = fresh();
    await inHost(stub, async (host) => {
      const added = await host.tasks.schedule("ticker", {
        id: "hourly",
        cron: "@hourly",
        input: { tag: "hourly" },
      });
      expect(added).toMatchObject({ source: "api", nextTickAt: SCHEDULE_DAY, missed: 0 });
      const before = host.tasks.schedules().length;
      const bad = [
        { id: "x", cron: "*/5 * * * * *" },
        { id: "x", cron: "61 * * * *" },
        { id: "x", cron: "* * * * *", timezone: "Mars/Olympus" },
        { id: "x", cron: "* * * * *", backfill: 1_001 },
        { id: "x", cron: "* * * * *", overlap: "sometimes" },
        { id: "__dk:x", cron: "* * * * *" },
        { id: "x", cron: "0 0 30 2 *" },
      ];
      for (const one of bad) {
        const error = await host.tasks.schedule("ticker", one as never).catch((thrown) => thrown);
        expect(isTasksError(error, "tasks/invalid-argument"), JSON.stringify(one)).toBe(true);
      }
      const conflict = await host.tasks
        .schedule("ticker", { id: "every5", cron: "* * * * *" })
        .catch((thrown) => thrown);
      expect(isTasksError(conflict, "tasks/conflict")).toBe(true);
      expect(() => host.tasks.unschedule("every5")).toThrow(/declared on definition/);
      expect(host.tasks.schedules()).toHaveLength(before);
      expect(host.tasks.unschedule("hourly")).toBe(true);
      expect(host.tasks.unschedule("hourly")).toBe(false);
    });
  });

  it("keeps declared schedules in step with the code: unchanged ones unwritten, changed ones from now, gone ones deleted", async () => {
    const stub = fresh();
    await runInDurableObject(stub, async (host: ScheduleObject, ctx) => {
      const before = host.rows(
        "SELECT schedule_id, updated_at FROM dk_tasks_schedules ORDER BY schedule_id",
      );
      host.setClock(SCHEDULE_DAY + 7 * MINUTE);
      const handler = async () => 1;
      // The same declarations again (a new instance of the object): nothing written.
      host.build(ctx);
      expect(
        host.rows("SELECT schedule_id, updated_at FROM dk_tasks_schedules ORDER BY schedule_id"),
      ).toEqual(before);
      // The next deploy: one schedule changed its cron, the others are gone; an added one stays.
      await host.tasks.schedule("ticker", { id: "added", cron: "@hourly" });
      const next = new Tasks(anotherInstance(ctx), {
        now: () => host.now(),
        definitions: {
          ticker: { handler, schedules: [{ id: "every5", cron: "*/10 * * * *" }] },
        },
      });
      expect(next.schedules().map((one) => [one.scheduleId, one.cron, one.nextTickAt])).toEqual([
        ["added", "@hourly", SCHEDULE_DAY + 60 * MINUTE],
        ["every5", "*/10 * * * *", SCHEDULE_DAY + 10 * MINUTE],
      ]);
      // The added schedule's definition is gone in a later deploy: its tick starts nothing.
      const without = new Tasks(anotherInstance(ctx), {
        now: () => SCHEDULE_DAY + 60 * MINUTE,
        definitions: { other: handler },
      });
      await without.alarm();
      expect(without.schedules()).toMatchObject([
        { scheduleId: "added", lastRunId: null, nextTickAt: SCHEDULE_DAY + 120 * MINUTE },
      ]);
      expect(host.rows("SELECT run_id FROM dk_tasks_runs WHERE run_id LIKE 'added@%'")).toEqual([]);
    });
  });

  it("refuses a definition's malformed schedule at construction", async () => {
    const stub = fresh();
    await runInDurableObject(stub, (_, ctx) => {
      const build = (schedules: unknown) =>
        new Tasks(ctx, { definitions: { other: { handler: async () => 1, schedules } as never } });
      expect(() => build([{ cron: "nope" }])).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
      expect(() => build("*/5 * * * *")).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
    });
  });
});
