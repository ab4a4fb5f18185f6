import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ReplayFixture } from "./fixtures/worker";
import { freshReplay, inReplay, storedCounters } from "./helpers";

/** Starts `source` as `id`, waits until `ready(counters)`, then restarts the object under it. */
async function startAndCrash(
  source: string,
  id: string,
  ready: (counters: Record<string, number>) => boolean,
  before?: (stub: DurableObjectStub<ReplayFixture>) => Promise<void>,
): Promise<DurableObjectStub<ReplayFixture>> {
  const stub = freshReplay();
  await stub.start(source, id);
  for (;;) {
    if (ready(await storedCounters(stub))) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await before?.(stub);
  // ctx.abort() resets the instance under the call in flight; storage (and the alarm) stay.
  await stub.crash().catch(() => {});
  return env.REPLAY.get(stub.id);
}

const IN_FLIGHT = `
  import { echo, slow } from "test:replay";
  export default async function () {
    const a = await echo("a");
    const b = await echo("b");
    const ms = await slow(300);
    const c = await echo("c");
    return [a, b, ms, c];
  }
`;

describe("replay: recovery", () => {
  it("completes a run restarted while a host call was in flight: completed calls are answered from the journal, the in-flight one runs again at most once", async () => {
    const stub = await startAndCrash(IN_FLIGHT, "flight-1", (c) => (c.slowStarts ?? 0) >= 1);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const record = await inReplay(stub, (instance) => instance.executor.get("flight-1"));
    expect(record).toMatchObject({ state: "completed", result: ["a", "b", 300, "c"], attempt: 2 });
    const counters = await storedCounters(stub);
    // echo("a") and echo("b") ran once: the replay answered them from the journal.
    expect(counters.echoes).toBe(3);
    expect(counters.slowStarts).toBe(2);
  });

  it("fails recovery with bridge/fingerprint-changed when a source module changed, saying which", async () => {
    const stub = await startAndCrash(
      IN_FLIGHT,
      "print-1",
      (c) => (c.slowStarts ?? 0) >= 1,
      (s) => s.setVersion(3),
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const record = await inReplay(stub, (instance) => instance.executor.get("print-1"));
    expect(record?.state).toBe("failed");
    expect(record?.error?.code).toBe("bridge/fingerprint-changed");
    expect(record?.error?.message).toContain('source module "test:lib"');
    // The journaled calls did not run again.
    expect((await storedCounters(stub)).echoes).toBe(2);
  });

  it("recovers after a deploy of host-module code: the fingerprint covers source modules only", async () => {
    const stub = await startAndCrash(
      IN_FLIGHT,
      "deploy-1",
      (c) => (c.slowStarts ?? 0) >= 1,
      (s) => s.setVersion(2),
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const record = await inReplay(stub, (instance) => instance.executor.get("deploy-1"));
    expect(record?.state).toBe("completed");
  });

  it("keeps an interrupted run interrupted across an eviction and an alarm", async () => {
    const stub = freshReplay();
    const first = await inReplay(stub, (instance) =>
      instance.executor.execute(
        `import { approval } from "test:replay"; export default async () => approval("later");`,
        undefined,
        { id: "idle-1" },
      ),
    );
    expect(first.state).toBe("interrupted");
    await evictDurableObject(stub);
    await runDurableObjectAlarm(stub);
    const record = await inReplay(stub, (instance) => ({
      record: instance.executor.get("idle-1"),
      wake: instance.executor.nextWakeAt(),
    }));
    expect(record.record).toMatchObject({ state: "interrupted", interrupt: { key: "1" } });
    expect(record.wake).toBeNull();
  });
});
