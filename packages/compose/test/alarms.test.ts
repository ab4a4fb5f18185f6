import {
  abortAllDurableObjects,
  env,
  evictDurableObject,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
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
      for (const bad of [{ retryDelayMs: -1 }, { maxRetryDelayMs: 0.5 }, { partTimeoutMs: 0 }]) {
        expect(() => new Alarms(ctx, { parts: [], ...bad })).toThrow(
          expect.objectContaining({ code: "compose/invalid-argument" }),
        );
      }
    });
  });
});

function bare() {
  counter += 1;
  return env.BARE.getByName(`bare-${counter}-${crypto.randomUUID()}`);
}

/** A clock a test moves by hand, passed as `now`: back-off and retry times are read from it. */
function handClock() {
  const clock = { at: Date.now(), now: () => clock.at };
  return clock;
}

function failuresOf(events: AlarmsEvent[]) {
  return events.filter((e) => e.type === "alarm:part-failed") as Extract<
    AlarmsEvent,
    { type: "alarm:part-failed" }
  >[];
}

/** A part whose alarm never settles (a hung fetch, a lost promise) until the test lets it: counts its starts. */
class HungPart {
  runs = 0;
  readonly #pending: (() => void)[] = [];
  constructor(readonly wakeAt: number | null) {}
  alarm(): Promise<void> {
    this.runs += 1;
    return new Promise((resolve) => {
      this.#pending.push(resolve);
    });
  }
  /** Lets every pending call return. */
  settle(): void {
    for (const resolve of this.#pending.splice(0)) resolve();
  }
  nextWakeAt(): number | null {
    return this.wakeAt;
  }
}

/** A part with a fixed wake that throws while `failuresLeft` > 0. */
class SlowPart {
  runs = 0;
  failuresLeft = 0;
  constructor(
    public wakeAt: number | null,
    readonly ms = 0,
  ) {}
  async alarm(): Promise<void> {
    this.runs += 1;
    if (this.ms > 0) await sleep(this.ms);
    if (this.failuresLeft > 0) {
      this.failuresLeft -= 1;
      throw new Error("part failed");
    }
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

  it("backs a failing part off 1 s, doubling up to 5 min by default, and from 1 s again after it succeeds", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const clock = handClock();
      const part = new SlowPart(clock.at - 60_000); // overdue the whole time
      part.failuresLeft = 11;
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, {
        parts: [part],
        now: clock.now,
        onEvent: (e) => events.push(e),
      });
      const delays = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000];
      for (const [index, delay] of [...delays, 300_000, 300_000].entries()) {
        await alarms.alarm();
        expect(part.runs).toBe(index + 1);
        expect(failuresOf(events).at(-1)).toMatchObject({
          failures: index + 1,
          retryAt: clock.at + delay,
        });
        // Its wake is its retry time, not its own overdue one; the alarm is armed there.
        expect(alarms.nextWakeAt()).toBe(clock.at + delay);
        expect(await ctx.storage.getAlarm()).toBe(clock.at + delay);
        // Not run again before its retry time, however overdue its work is.
        clock.at += delay - 1;
        await alarms.alarm();
        expect(part.runs).toBe(index + 1);
        clock.at += 1;
      }
      await alarms.alarm(); // the 12th run succeeds: the back-off is forgotten
      expect(part.runs).toBe(12);
      expect(failuresOf(events)).toHaveLength(11);
      expect(alarms.nextWakeAt()).toBe(part.wakeAt);
      part.failuresLeft = 1;
      await alarms.alarm();
      expect(failuresOf(events).at(-1)).toMatchObject({ failures: 1, retryAt: clock.at + 1_000 });
    });
  });

  it("takes the back-off from retryDelayMs and maxRetryDelayMs", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const clock = handClock();
      const part = new SlowPart(clock.at - 1);
      part.failuresLeft = 4;
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, {
        parts: [part],
        retryDelayMs: 250,
        maxRetryDelayMs: 600,
        now: clock.now,
        onEvent: (e) => events.push(e),
      });
      const seen: number[] = [];
      for (let i = 0; i < 4; i++) {
        await alarms.alarm();
        const retryAt = failuresOf(events).at(-1)?.retryAt as number;
        seen.push(retryAt - clock.at);
        clock.at = retryAt;
      }
      expect(seen).toEqual([250, 500, 600, 600]);
    });
  });

  it("does not run a backing-off part when another part's wake fires the alarm earlier", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const clock = handClock();
      const failing = new SlowPart(clock.at - 1);
      failing.failuresLeft = 5;
      const other = new SlowPart(clock.at + 400);
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, {
        parts: [failing, other],
        retryDelayMs: 60_000,
        now: clock.now,
        onEvent: (e) => events.push(e),
      });
      const start = clock.at;
      await alarms.alarm();
      expect(failing.runs).toBe(1);
      // The other part's wake is earlier than the failing part's retry: it wins.
      expect(await ctx.storage.getAlarm()).toBe(start + 400);
      clock.at = start + 400;
      other.wakeAt = null;
      await alarms.alarm();
      expect(other.runs).toBe(2);
      expect(failing.runs).toBe(1); // skipped, its back-off untouched
      expect(failuresOf(events)).toHaveLength(1);
      expect(await ctx.storage.getAlarm()).toBe(start + 60_000);
    });
  });
});

describe("a part never stops the others", () => {
  it("arms the other parts' wakes when a part's alarm never settles, and never starts it twice", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const clock = handClock();
      const hung = new HungPart(clock.at - 1);
      const other = new SlowPart(clock.at + 30_000);
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, {
        parts: [hung, other],
        partTimeoutMs: 100,
        retryDelayMs: 60_000,
        now: clock.now,
        onEvent: (event) => events.push(event),
      });
      const start = clock.at;
      await alarms.alarm(); // returns although the hung part never settles
      expect(other.runs).toBe(1);
      const [failed] = failuresOf(events);
      expect(failed).toMatchObject({ part: 0, failures: 1, retryAt: start + 60_000 });
      expect(isComposeError(failed?.error, "compose/part-timeout")).toBe(true);
      expect(failed?.error).toMatchObject({
        message: expect.stringMatching(/did not settle within 100 ms/),
      });
      // The other part's later wake is armed while the hung part is still pending.
      expect(await ctx.storage.getAlarm()).toBe(start + 30_000);
      expect(events.at(-1)).toEqual({ type: "alarm:armed", at: start + 30_000 });
      clock.at = start + 60_000; // the hung part's retry time
      await alarms.alarm();
      expect(hung.runs).toBe(1); // still running: not started a second time
      expect(other.runs).toBe(2);
      const second = failuresOf(events)[1];
      expect(second).toMatchObject({ part: 0, failures: 2, retryAt: clock.at + 120_000 });
      expect(isComposeError(second?.error, "compose/part-timeout")).toBe(true);
      expect(second?.error).toMatchObject({
        message: expect.stringMatching(/still running from an earlier alarm/),
      });
    });
  });

  it("starts an overrunning part again only after its call settled and its retry time came", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const clock = handClock();
      const hung = new HungPart(clock.at - 1);
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, {
        parts: [hung],
        partTimeoutMs: 50,
        now: clock.now,
        onEvent: (event) => events.push(event),
      });
      await alarms.alarm();
      hung.settle();
      await sleep(0);
      await alarms.alarm(); // settled, but still backing off
      expect(hung.runs).toBe(1);
      clock.at += 1_000;
      const again = alarms.alarm();
      expect(hung.runs).toBe(2);
      hung.settle();
      await again;
      expect(failuresOf(events)).toHaveLength(1); // settled in time: no second failure
      expect(alarms.nextWakeAt()).toBe(hung.wakeAt); // and its back-off is over
    });
  });

  it("runs a part again when an alarm overlaps one whose call is still within its bound (tasks extend live claims that way)", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const slow = new HungPart(Date.now() + 60_000);
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, { parts: [slow], onEvent: (e) => events.push(e) });
      let firstDone = false;
      const first = alarms.alarm().then(() => {
        firstDone = true;
      });
      const second = alarms.alarm();
      expect(slow.runs).toBe(2);
      slow.settle();
      await Promise.all([first, second]);
      expect(firstDone).toBe(true);
      expect(failuresOf(events)).toEqual([]);
      expect(await ctx.storage.getAlarm()).toBe(slow.wakeAt);
    });
  });

  it("bounds a part's alarm() at 30 s by default: waited for 29,999 ms, reported compose/part-timeout at 30,000 ms", async () => {
    await runInDurableObject(bare(), async (_, ctx) => {
      const hung = new HungPart(null);
      const other = new SlowPart(Date.now() + 3_600_000);
      const events: AlarmsEvent[] = [];
      const alarms = new Alarms(ctx, { parts: [hung, other], onEvent: (e) => events.push(e) });
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      try {
        let returned = false;
        const run = alarms.alarm().then(() => {
          returned = true;
        });
        await vi.advanceTimersByTimeAsync(29_999);
        expect(returned).toBe(false);
        expect(failuresOf(events)).toEqual([]);
        await vi.advanceTimersByTimeAsync(1);
        vi.useRealTimers();
        await run;
        const [failed] = failuresOf(events);
        expect(isComposeError(failed?.error, "compose/part-timeout")).toBe(true);
        expect(failed?.error).toMatchObject({
          message: expect.stringMatching(/did not settle within 30000 ms/),
        });
        expect(await ctx.storage.getAlarm()).toBe(failed?.retryAt);
      } finally {
        vi.useRealTimers();
      }
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
      expect((caught as Error).message).toMatch(/Compose every part in one Alarms/);
      await host.alarms.rearm();
      expect(await ctx.storage.getAlarm()).toBe(soon);
    });
  });

  it("constructs the Alarms of a new instance after the object was evicted or aborted", async () => {
    const name = `evicted-${crypto.randomUUID()}`;
    const wake = Date.now() + 60_000;
    await runInDurableObject(env.FIXTURE.getByName(name), async (host) => {
      await host.first.wantWakeAt(wake);
    });
    await evictDurableObject(env.FIXTURE.getByName(name));
    await runInDurableObject(env.FIXTURE.getByName(name), async (host, ctx) => {
      // A new instance with a new Alarms (the constructor did not throw), over the same alarm.
      expect(host.alarms.nextWakeAt()).toBeNull();
      expect(await ctx.storage.getAlarm()).toBe(wake);
    });
    await abortAllDurableObjects();
    await runInDurableObject(env.FIXTURE.getByName(name), async (host, ctx) => {
      expect(host.alarms.nextWakeAt()).toBeNull();
      expect(await ctx.storage.getAlarm()).toBe(wake);
    });
  });
});

describe("a Durable Object without SQLite storage", () => {
  it("is refused with compose/invalid-argument naming new_sqlite_classes, not the runtime's plain error", async () => {
    const stub = env.KEY_VALUE.getByName(`kv-${crypto.randomUUID()}`);
    const thrown = await stub.construct();
    expect(thrown.name).toBe("ComposeError");
    expect(thrown.code).toBe("compose/invalid-argument");
    expect(thrown.message).toContain('"new_sqlite_classes"');
  });
});

describe("an alarm() that does not delegate to Alarms", () => {
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("is reported as alarm:not-delegated naming the fix when a part's next wake finds the alarm gone", async () => {
    const stub = env.UNDELEGATING.getByName(`undelegating-${crypto.randomUUID()}`);
    await stub.wantWakeIn(50);
    await pause(100);
    // The object's alarm() runs, and does not call this.alarms.alarm().
    await runDurableObjectAlarm(stub);
    await stub.wantWakeIn(1_000);
    expect(await stub.reported()).toEqual([
      {
        code: "compose/not-delegated",
        message: expect.stringContaining("override alarm() { return this.alarms.alarm(); }"),
      },
    ]);
  });

  it("reports nothing for a host whose alarm() delegates", async () => {
    const stub = env.FIXTURE.getByName(`delegating-${crypto.randomUUID()}`);
    await runInDurableObject(stub, (instance) => instance.first.wantWakeAt(Date.now() + 50));
    await pause(100);
    await runDurableObjectAlarm(stub);
    const events = await runInDurableObject(stub, async (instance) => {
      await instance.first.wantWakeAt(Date.now() + 1_000);
      return instance.events.map((event) => event.type);
    });
    expect(events).not.toContain("alarm:not-delegated");
    expect(events).toContain("alarm:armed");
  });
});
