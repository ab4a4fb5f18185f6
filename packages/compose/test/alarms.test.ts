import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Alarms, isComposeError, requestWake } from "../src/index";

let counter = 0;
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
    await runDurableObjectAlarm(stub);
    await runInDurableObject(stub, async (host, ctx) => {
      const failures = host.events.filter((event) => event.type === "alarm:part-failed");
      expect(failures.map((event) => event.failures)).toEqual([1, 2]);
      const armed = (await ctx.storage.getAlarm()) as number;
      // The second retry waits longer than the first.
      expect(armed - Date.now()).toBeGreaterThan(firstRetry - Date.now());
    });
    await runDurableObjectAlarm(stub);
    await runInDurableObject(stub, async (host, ctx) => {
      expect(host.first.runs).toBe(3);
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
