import {
  abortAllDurableObjects,
  env,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Alarms, type AlarmsEvent, isComposeError, requestWake } from "../src/index";

let counter = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
function fixture() {
  counter += 1;
  return env.FIXTURE.getByName(`alarms-${counter}-${crypto.randomUUID()}`);
}

describe("requestWake", () => {
  it("arms an unset alarm and moves it earlier, never later", async () => {
    const stub = fixture();
    const base = Date.now() + 60_000;
    await runInDurableObject(stub, async (_, ctx) => {
      await requestWake(ctx, base + 5_000);
      expect(await ctx.storage.getAlarm()).toBe(base + 5_000);
      await requestWake(ctx, base + 10_000);
      expect(await ctx.storage.getAlarm()).toBe(base + 5_000);
      await requestWake(ctx, base);
      expect(await ctx.storage.getAlarm()).toBe(base);
    });
  });

  it("reads an alarm armed by an earlier instance before deciding", async () => {
    const stub = fixture();
    const at = Date.now() + 60_000;
    await runInDurableObject(stub, async (_, ctx) => {
      await ctx.storage.setAlarm(at);
    });
    await runInDurableObject(stub, async (_, ctx) => {
      // A fresh storage object in tests shares the slot only with itself, so it reads the alarm.
      await requestWake(ctx, at + 1_000);
      expect(await ctx.storage.getAlarm()).toBe(at);
    });
  });

  it("keeps concurrent requests ordered so the earliest wins", async () => {
    const stub = fixture();
    const base = Date.now() + 60_000;
    await runInDurableObject(stub, async (_, ctx) => {
      await Promise.all([
        requestWake(ctx, base + 3_000),
        requestWake(ctx, base + 1_000),
        requestWake(ctx, base + 2_000),
      ]);
      expect(await ctx.storage.getAlarm()).toBe(base + 1_000);
    });
  });

  it("refuses a wake time that is not a finite number with a coded error", async () => {
    await runInDurableObject(fixture(), async (_, ctx) => {
      for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, "soon" as never]) {
        let thrown: unknown;
        try {
          await requestWake(ctx, bad);
        } catch (error) {
          thrown = error;
        }
        expect(isComposeError(thrown, "compose/invalid-argument")).toBe(true);
      }
    });
  });
});

describe("Alarms", () => {
  it("runs every part and arms the earliest next wake", async () => {
    const stub = fixture();
    const later = Date.now() + 120_000;
    await runInDurableObject(stub, async (host) => {
      await host.first.wantWakeAt(Date.now() - 1);
      host.second.wakeAt = later;
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await runInDurableObject(stub, async (host, ctx) => {
      expect(host.first.runs).toBe(1);
      expect(host.second.runs).toBe(1);
      expect(await ctx.storage.getAlarm()).toBe(later);
      expect(host.events.at(-1)).toEqual({ type: "alarm:armed", at: later });
    });
  });

  it("deletes the alarm when no part needs a wake", async () => {
    const stub = fixture();
    await runInDurableObject(stub, async (host) => {
      await host.first.wantWakeAt(Date.now() - 1);
    });
    await runDurableObjectAlarm(stub);
    await runInDurableObject(stub, async (_, ctx) => {
      expect(await ctx.storage.getAlarm()).toBeNull();
    });
  });

  it("lets a failing part neither starve the others nor be forgotten: it is retried with back-off", async () => {
    const stub = fixture();
    const far = Date.now() + 3_600_000;
    await runInDurableObject(stub, async (host) => {
      host.first.failuresLeft = 2;
      await host.first.wantWakeAt(Date.now() - 1);
      host.second.wakeAt = far;
    });
    await runDurableObjectAlarm(stub);
    const firstRetry = await runInDurableObject(stub, async (host, ctx) => {
      expect(host.second.runs).toBe(1);
      const failed = host.events.find((event) => event.type === "alarm:part-failed");
      expect(failed).toMatchObject({ type: "alarm:part-failed", part: 0, failures: 1 });
      const armed = await ctx.storage.getAlarm();
      expect(armed).not.toBeNull();
      expect(armed as number).toBeLessThan(far);
      return armed as number;
    });
    // A failed part is not run again before its retry time.
    await sleep(firstRetry - Date.now() + 30);
    await runDurableObjectAlarm(stub);
    const secondRetry = await runInDurableObject(stub, async (host, ctx) => {
      const failures = host.events.filter((event) => event.type === "alarm:part-failed");
      expect(failures.map((event) => event.failures)).toEqual([1, 2]);
      const armed = (await ctx.storage.getAlarm()) as number;
      // The second retry waits longer than the first.
      expect(armed - Date.now()).toBeGreaterThan(1_000);
      return armed;
    });
    await sleep(secondRetry - Date.now() + 30);
    await runDurableObjectAlarm(stub);
    await runInDurableObject(stub, async (host, ctx) => {
      // Failed twice, then ran clean (the platform's own alarm may have run it once more).
      expect(host.first.runs).toBeGreaterThanOrEqual(3);
      expect(
        host.events.filter((event) => event.type === "alarm:part-failed").map((e) => e.failures),
      ).toEqual([1, 2]);
      expect(await ctx.storage.getAlarm()).toBe(far);
    });
  });

  it("a part's earlier wake requested between alarms is never pushed later by another part", async () => {
    const stub = fixture();
    const soon = Date.now() + 3_000;
    await runInDurableObject(stub, async (host, ctx) => {
      await host.first.wantWakeAt(soon);
      await host.second.wantWakeAt(Date.now() + 3_600_000);
      expect(await ctx.storage.getAlarm()).toBe(soon);
    });
  });

  it("refuses parts that are not parts with a coded error", async () => {
    await runInDurableObject(fixture(), async (_, ctx) => {
      expect(() => new Alarms(ctx, { parts: [{} as never] })).toThrow(
        expect.objectContaining({ code: "compose/invalid-argument" }),
      );
      expect(() => new Alarms(ctx, undefined as never)).toThrow(
        expect.objectContaining({ code: "compose/invalid-argument" }),
      );
      expect(() => new Alarms(ctx, { parts: [], retryDelayMs: -1 })).toThrow(
        expect.objectContaining({ code: "compose/invalid-argument" }),
      );
    });
  });
});

function bare() {
  counter += 1;
  return env.BARE.getByName(`bare-${counter}-${crypto.randomUUID()}`);
}

/** A part whose alarm never settles (a hung fetch, a lost promise): counts its starts. */
class HungPart {
  runs = 0;
  constructor(readonly wakeAt: number) {}
  alarm(): Promise<void> {
    this.runs += 1;
    return new Promise(() => {});
  }
  nextWakeAt(): number | null {
    return this.wakeAt;
  }
}

/** A part with a fixed wake whose alarm takes `ms`. */
class SlowPart {
  runs = 0;
  constructor(
    readonly wakeAt: number | null,
    readonly ms = 0,
  ) {}
  async alarm(): Promise<void> {
    this.runs += 1;
    if (this.ms > 0) await sleep(this.ms);
  }
  nextWakeAt(): number | null {
    return this.wakeAt;
  }
}

describe("a failing part backs off", () => {
  it("retries a throwing part with overdue work after the back-off (1 s, doubling), never at once", async () => {
    const stub = fixture();
    await runInDurableObject(stub, async (host, ctx) => {
      host.first.wakeAt = Date.now() - 60_000; // overdue work that keeps failing
      host.first.failuresLeft = 10;
      const before = Date.now();
      await host.alarms.alarm();
      const armed = (await ctx.storage.getAlarm()) as number;
      expect(armed).toBeGreaterThanOrEqual(before + 1_000);
      expect(armed).toBeLessThan(before + 1_000 + 500);
      expect(host.alarms.nextWakeAt()).toBe(armed);
      // The alarm fires early (another part's wake): the backing-off part is not run again.
      await host.alarms.alarm();
      expect(host.first.runs).toBe(1);
      expect(host.events.filter((e) => e.type === "alarm:part-failed")).toHaveLength(1);
    });
    await sleep(1_050);
    await runInDurableObject(stub, async (host, ctx) => {
      // Its retry time passed (the platform's alarm may already have run it): run it at most once.
      await host.alarms.alarm();
      expect(host.first.runs).toBe(2);
      const failed = host.events.filter((e) => e.type === "alarm:part-failed") as {
        failures: number;
        retryAt: number;
      }[];
      expect(failed.map((e) => e.failures)).toEqual([1, 2]);
      // Doubled: the second retry is at least 2 s after the first one ran.
      expect(failed[1]?.retryAt).toBeGreaterThanOrEqual((failed[0]?.retryAt ?? 0) + 2_000);
      expect(await ctx.storage.getAlarm()).toBe(failed[1]?.retryAt);
    });
  });
});

describe("a part never stops the others", () => {
  it("arms the other parts' wakes when a part's alarm never settles, and never starts it twice", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const hung = new HungPart(Date.now() - 1);
      const other = new SlowPart(Date.now() + 60_000);
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, {
        parts: [hung, other],
        partTimeoutMs: 100,
        onEvent: (event) => events.push(event),
      });
      const before = Date.now();
      await alarms.alarm(); // returns although the hung part never settles
      expect(other.runs).toBe(1);
      const failed = events.find((e) => e.type === "alarm:part-failed");
      expect(failed).toMatchObject({ part: 0, failures: 1 });
      expect(isComposeError((failed as { error: unknown }).error, "compose/part-timeout")).toBe(
        true,
      );
      // Armed for the hung part's retry (1 s), the earliest wake; the other part's hour-away wake waits.
      expect((await ctx.storage.getAlarm()) as number).toBeGreaterThanOrEqual(before + 1_000);
      await sleep(1_050);
      await alarms.alarm();
      expect(hung.runs).toBe(1); // still running: not started a second time
      expect(events.filter((e) => e.type === "alarm:part-failed").at(-1)).toMatchObject({
        part: 0,
        failures: 2,
      });
      expect(other.runs).toBe(2);
    });
  });

  it("lets a part take longer than a small bound by default (30 s)", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const slow = new SlowPart(null, 300);
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, { parts: [slow], onEvent: (event) => events.push(event) });
      await alarms.alarm();
      expect(slow.runs).toBe(1);
      expect(events.filter((e) => e.type === "alarm:part-failed")).toEqual([]);
      expect(() => new Alarms(ctx, { parts: [], partTimeoutMs: 0 })).toThrow(
        expect.objectContaining({ code: "compose/invalid-argument" }),
      );
    });
  });
});

describe("one Alarms per object", () => {
  it("refuses a second Alarms on an object with compose/conflict, leaving the first one's wake", async () => {
    const stub = fixture();
    await runInDurableObject(stub, async (host, ctx) => {
      const soon = Date.now() + 20_000;
      await host.first.wantWakeAt(soon);
      let caught: unknown;
      try {
        new Alarms(ctx, { parts: [new SlowPart(Date.now() + 3_600_000)] });
      } catch (error) {
        caught = error;
      }
      expect(isComposeError(caught, "compose/conflict")).toBe(true);
      expect((caught as Error).message).toMatch(/one Alarms/);
      await host.alarms.rearm();
      expect(await ctx.storage.getAlarm()).toBe(soon);
    });
  });

  it("constructs the Alarms of a new instance after the object was evicted", async () => {
    const name = `evicted-${crypto.randomUUID()}`;
    await runInDurableObject(env.FIXTURE.getByName(name), async (host) => {
      await host.first.wantWakeAt(Date.now() + 60_000);
    });
    await abortAllDurableObjects();
    const again = env.FIXTURE.getByName(name);
    await runInDurableObject(again, async (host) => {
      expect(host.alarms.nextWakeAt()).toBeNull(); // a new instance, a new Alarms: constructed fine
    });
  });
});
