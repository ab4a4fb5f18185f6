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
    // echo("a") and echo("b") came from the journal under the new module version.
    expect((await storedCounters(stub)).echoes).toBe(3);
  });

  it("fails a resume with bridge/fingerprint-changed when the isolate's compatibility date or flags changed since the run was recorded, naming which, and runs nothing again", async () => {
    const program = `import { echo, approval } from "test:replay";
      export default async () => [await echo(1), await approval("ok?")];`;
    const cases: [string, { compatibilityDate?: string; compatibilityFlags?: string[] }, string][] =
      [
        ["compat-date", { compatibilityDate: "2025-01-01" }, "compatibilityDate"],
        ["compat-flags", { compatibilityFlags: ["nodejs_compat"] }, "compatibilityFlags"],
      ];
    for (const [id, changed, named] of cases) {
      const stub = freshReplay();
      const first = await inReplay(stub, (i) => i.create().execute(program, undefined, { id }));
      expect(first.state).toBe("interrupted");
      const resumed = await inReplay(stub, (i) =>
        i.create({ ...changed }).resume(id, { approved: true }),
      );
      expect(resumed.state, id).toBe("failed");
      expect(resumed.error?.code, id).toBe("bridge/fingerprint-changed");
      expect(resumed.error?.message, id).toContain(named);
      expect(await storedCounters(stub)).toMatchObject({ echoes: 1, approvals: 1 });
    }
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

  it("restarts a replay run again after a second object death only when its journal grew since the previous restart", async () => {
    const TWO_SLOW = `import { slow } from "test:replay";
      export default async () => [await slow(300), await slow(301)];`;
    const waitFor = async (stub: DurableObjectStub<ReplayFixture>, starts: number) => {
      for (;;) {
        if (((await storedCounters(stub)).slowStarts ?? 0) >= starts) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const crashAgain = async (stub: DurableObjectStub<ReplayFixture>, starts: number) => {
      // The alarm drives attempt 2; the object dies under it once `starts` slow calls began.
      const alarm = runDurableObjectAlarm(stub).catch(() => false);
      await waitFor(stub, starts);
      await stub.crash().catch(() => {});
      await alarm;
      return env.REPLAY.get(stub.id);
    };
    // Grew: attempt 2 journaled slow(300) and died in slow(301); attempt 3 finishes the run.
    const grew = await crashAgain(
      await startAndCrash(TWO_SLOW, "grow-1", (c) => c.slowStarts === 1),
      3,
    );
    expect(await runDurableObjectAlarm(grew)).toBe(true);
    const grown = await inReplay(grew, (i) => i.executor.get("grow-1"));
    expect(grown).toMatchObject({ state: "completed", attempt: 3, result: [300, 301] });
    // Did not grow: attempt 2 died in slow(300) again, before journaling anything.
    const stuck = await crashAgain(
      await startAndCrash(TWO_SLOW, "stuck-1", (c) => c.slowStarts === 1),
      2,
    );
    expect(await runDurableObjectAlarm(stuck)).toBe(true);
    const failed = await inReplay(stuck, (i) => i.executor.get("stuck-1"));
    expect(failed).toMatchObject({ state: "failed", attempt: 2 });
    expect(failed?.error?.code).toBe("bridge/too-many-attempts");
  });
});
