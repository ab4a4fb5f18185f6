import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";

import type { GettingStarted } from "./fixtures/worker";

/** Waits (real time, real alarm) until the run settles; fails the test after `limitMs`. */
async function settle(stub: DurableObjectStub<GettingStarted>, runId: string, limitMs: number) {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    const snapshot = await runInDurableObject(stub, (host) => host.tasks.get(runId));
    if (
      snapshot &&
      snapshot.state !== "running" &&
      snapshot.state !== "waiting" &&
      snapshot.state !== "pending"
    ) {
      return snapshot;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`run ${runId} did not settle within ${limitMs} ms: the object was not woken`);
}

/** Lets a run reach its sleep (state `waiting`), inside the object. */
async function untilWaiting(host: GettingStarted, runId: string): Promise<void> {
  for (let i = 0; i < 100 && (await host.tasks.get(runId))?.state !== "waiting"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The alarm is armed no later than the 3 s sleep (plus slack for the test's own calls), and the run
 * then completes through the real alarm.
 */
async function expectWokenOnTime(
  stub: DurableObjectStub<GettingStarted>,
  wake: { armed: number | null; started: number; runId: string },
): Promise<void> {
  expect(wake.armed).not.toBeNull();
  expect(wake.armed as number).toBeLessThanOrEqual(wake.started + 3_000 + 2_000);
  expect(await settle(stub, wake.runId, 15_000)).toMatchObject({ state: "completed" });
}

describe("the alarm recipes of the docs", () => {
  it("wakes a sleeping task of the getting-started object on time (no armAlarm to forget)", async () => {
    const stub = env.GETTING_STARTED.getByName(`gs-${crypto.randomUUID()}`);
    const started = Date.now();
    const receipt = await runInDurableObject(stub, (host) => host.tasks.run("nap@v1", null));
    const armed = await runInDurableObject(stub, async (host, ctx) => {
      await untilWaiting(host, receipt.runId);
      return ctx.storage.getAlarm();
    });
    await expectWokenOnTime(stub as unknown as DurableObjectStub<GettingStarted>, {
      armed,
      started,
      runId: receipt.runId,
    });
  });

  it("does not let a stream's one-hour TTL push a 3 s task wake later (tasks + sse recipes combined)", async () => {
    const stub = env.TASKS_AND_SSE.getByName(`mix-${crypto.randomUUID()}`);
    const started = Date.now();
    const receipt = await runInDurableObject(stub, (host) => host.tasks.run("nap@v1", null));
    await runInDurableObject(stub, async (host) => {
      await untilWaiting(host as unknown as GettingStarted, receipt.runId);
      // The stream asks for its retention wake an hour out, after the task asked for 3 s.
      host.openStream("ttl-stream");
    });
    const response = await stub.fetch("http://recipes/?stream=ttl-stream");
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    await response.body?.cancel();
    const armed = await runInDurableObject(stub, (_host, ctx) => ctx.storage.getAlarm());
    await expectWokenOnTime(stub as unknown as DurableObjectStub<GettingStarted>, {
      armed,
      started,
      runId: receipt.runId,
    });
    // After the task is done, the stream's retention wake is what remains armed.
    const after = await runInDurableObject(stub, (_host, ctx) => ctx.storage.getAlarm());
    expect(after as number).toBeGreaterThan(Date.now() + 3_000_000);
  });
});
