import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Fixture } from "./fixtures/worker";
import { freshFixture, inFixture, run } from "./helpers";

const HANG_ON_FIRST_ATTEMPT = `
  import { hangFirst } from "test:probe";
  export default async function () { return hangFirst(); }
`;

async function startAndRestart(
  stub: DurableObjectStub<Fixture>,
  source: string,
  id: string,
  onInterrupt: "fail" | "restart",
): Promise<DurableObjectStub<Fixture>> {
  await stub.start(source, id, { onInterrupt });
  // Wait until the program is inside its hanging host call, then evict the object under it.
  for (;;) {
    const attempts = await inFixture(stub, (instance) => instance.counters.attempts.length);
    if (attempts > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // ctx.abort() (not eviction, which waits for the hanging call to drain) resets the instance, keeping storage.
  await stub.crash().catch(() => {});
  // A stub of an aborted object stays broken: talk to the restarted object through a new one.
  return env.FIXTURE.get(stub.id);
}

describe("executions", () => {
  it("records an execution in SQLite with its result", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `export default async function (input) { return { doubled: input.n * 2, when: new Date(5) }; }`,
      { n: 21 },
      { id: "rec-1" },
    );
    expect(execution).toMatchObject({ executionId: "rec-1", state: "completed" });
    const record = await inFixture(stub, (instance) => instance.executor.get("rec-1"));
    expect(record).toMatchObject({
      executionId: "rec-1",
      state: "completed",
      onInterrupt: "fail",
      access: "read-write",
      attempt: 1,
      calls: 0,
      result: { doubled: 42, when: new Date(5) },
    });
    expect(record?.finishedAt).toBeGreaterThanOrEqual(
      record?.startedAt ?? Number.POSITIVE_INFINITY,
    );
  });

  it("refuses a second execution with the same id", async () => {
    const stub = freshFixture();
    await run(stub, `export default () => 1;`, undefined, { id: "dup" });
    const code = await inFixture(stub, (instance) =>
      instance.executor.execute(`export default () => 2;`, undefined, { id: "dup" }).then(
        () => "ran",
        (error: { code: string }) => error.code,
      ),
    );
    expect(code).toBe("bridge/conflict");
  });

  it('fails a running execution after its object restarts when onInterrupt is "fail"', async () => {
    const stub = await startAndRestart(freshFixture(), HANG_ON_FIRST_ATTEMPT, "fail-1", "fail");
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const record = await inFixture(stub, (instance) => instance.executor.get("fail-1"));
    expect(record).toMatchObject({ state: "failed", attempt: 1 });
    expect(record?.error?.code).toBe("bridge/interrupted");
  });

  it('runs a running execution again from the top after its object restarts when onInterrupt is "restart"', async () => {
    const stub = await startAndRestart(
      freshFixture(),
      HANG_ON_FIRST_ATTEMPT,
      "restart-1",
      "restart",
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const after = await inFixture(stub, (instance) => ({
      record: instance.executor.get("restart-1"),
      attempts: instance.counters.attempts,
    }));
    expect(after.record).toMatchObject({ state: "completed", attempt: 2, result: "attempt 2" });
    expect(after.attempts).toEqual([2]);
  });

  it("recovers an execution cut by a restart on the new instance's first wake, not at the gone run's timeout", async () => {
    const stub = await startAndRestart(
      freshFixture(),
      HANG_ON_FIRST_ATTEMPT,
      "first-wake-1",
      "restart",
    );
    const restarted = Date.now();
    // One request reaches the new instance; nothing runs the alarm by hand.
    const timeout = await inFixture(stub, (instance) => instance.executor.limits.runTimeoutMs);
    for (;;) {
      const record = await inFixture(stub, (instance) => instance.executor.get("first-wake-1"));
      if (record?.state === "completed") {
        expect(record).toMatchObject({ attempt: 2, result: "attempt 2" });
        break;
      }
      if (Date.now() - restarted > 2_000) {
        throw new Error(`not recovered within 2 s: ${JSON.stringify(record)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // The gone instance asked for its recovery wake only at the run's timeout and a second.
    expect(timeout).toBeGreaterThan(2_000);
  });

  it("keeps a restarted execution's first started_at", async () => {
    const fixture = freshFixture();
    const first = await startAndRestart(fixture, HANG_ON_FIRST_ATTEMPT, "started-1", "restart");
    const before = await inFixture(first, (instance) => instance.executor.get("started-1"));
    // Let the clock move on, so a restart that rewrote started_at would be seen.
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The new instance's first wake (the read above) has asked for its recovery: run it now, unless
    // it already ran.
    await runDurableObjectAlarm(first);
    let after = await inFixture(first, (instance) => instance.executor.get("started-1"));
    for (let i = 0; after?.state === "running" && i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await inFixture(first, (instance) => instance.executor.get("started-1"));
    }
    expect(after).toMatchObject({ state: "completed", attempt: 2 });
    expect(after?.startedAt).toBe(before?.startedAt);
    expect(after?.finishedAt).toBeGreaterThan(before?.startedAt ?? Number.POSITIVE_INFINITY);
  });

  it('recovers each execution by the policy stored with it: a "replay" row without a recorded fingerprint fails with bridge/fingerprint-changed, running nothing', async () => {
    const first = await startAndRestart(
      freshFixture(),
      HANG_ON_FIRST_ATTEMPT,
      "replay-row",
      "restart",
    );
    // A replay row with no fingerprint (none is ever written so): it cannot be replayed safely.
    await inFixture(first, (_instance, state) => {
      state.storage.sql.exec(
        "UPDATE dk_bridge_executions SET on_interrupt = 'replay' WHERE id = 'replay-row'",
      );
    });
    expect(await runDurableObjectAlarm(first)).toBe(true);
    const after = await inFixture(first, (instance) => ({
      record: instance.executor.get("replay-row"),
      attempts: instance.counters.attempts,
    }));
    expect(after.record).toMatchObject({ state: "failed", attempt: 1, onInterrupt: "replay" });
    expect(after.record?.error?.code).toBe("bridge/fingerprint-changed");
    expect(after.attempts).toEqual([]);
  });

  it("restarts a run its object died under at most once: a second death fails it without running again", async () => {
    const first = await startAndRestart(
      freshFixture(),
      HANG_ON_FIRST_ATTEMPT,
      "twice-dead",
      "restart",
    );
    // As if the automatic restart (attempt 2) had hung the runtime and died too.
    await inFixture(first, (_instance, state) => {
      state.storage.sql.exec("UPDATE dk_bridge_executions SET attempt = 2 WHERE id = 'twice-dead'");
    });
    expect(await runDurableObjectAlarm(first)).toBe(true);
    const after = await inFixture(first, (instance) => ({
      record: instance.executor.get("twice-dead"),
      attempts: instance.counters.attempts,
    }));
    expect(after.record).toMatchObject({ state: "failed", attempt: 2 });
    expect(after.record?.error?.code).toBe("bridge/too-many-attempts");
    expect(after.attempts).toEqual([]);
  });

  it("does not restart a run after a call marked unsafeToRepeat ran", async () => {
    const source = `
      import { charge, hangFirst } from "test:probe";
      export default async function () { await charge(); return hangFirst(); }
    `;
    const stub = await startAndRestart(freshFixture(), source, "unsafe-1", "restart");
    await runDurableObjectAlarm(stub);
    const after = await inFixture(stub, (instance) => ({
      record: instance.executor.get("unsafe-1"),
      writes: instance.counters.writes,
    }));
    expect(after.record?.state).toBe("failed");
    expect(after.record?.error?.code).toBe("bridge/unsafe-to-repeat");
    expect(after.record?.unsafeCall).toBe("test:probe.charge");
    expect(after.writes).toBe(0);
  });

  it('restarts the run when host code calls ctx.interrupt() with onInterrupt "restart", and fails it with "fail"', async () => {
    const stub = freshFixture();
    const source = `
      import { interrupt } from "test:probe";
      export default async function () { return interrupt(); }
    `;
    const restarted = await run(stub, source, undefined, { onInterrupt: "restart" });
    expect(restarted).toMatchObject({ state: "completed", result: "attempt 2" });
    const failed = await run(stub, source, undefined, { onInterrupt: "fail" });
    expect(failed.state).toBe("failed");
    expect(failed.error?.code).toBe("bridge/interrupted");
    expect(failed.error?.message).toContain("asked to restart");
  });

  it("types ctx.interrupt(payload) as the value resume will give, and still restarts or fails the run", async () => {
    const stub = freshFixture();
    const source = `
      import { interruptFor } from "test:probe";
      export default async function () { return interruptFor(); }
    `;
    const restarted = await run(stub, source, undefined, { onInterrupt: "restart" });
    expect(restarted).toMatchObject({ state: "completed", result: "attempt 2" });
    const failed = await run(stub, source, undefined, { onInterrupt: "fail" });
    expect(failed.state).toBe("failed");
    expect(failed.error?.code).toBe("bridge/interrupted");
    expect(failed.error?.message).toContain("test:probe.interruptFor interrupted the run");
  });

  it("gives up a restarting run after maxAttempts", async () => {
    const stub = freshFixture();
    await stub.configure({ maxAttempts: 1 });
    const execution = await run(
      stub,
      `import { interrupt } from "test:probe"; export default async () => interrupt();`,
      undefined,
      { onInterrupt: "restart" },
    );
    expect(execution.error?.code).toBe("bridge/too-many-attempts");
  });

  it('runs onInterrupt "replay" and refuses an unknown policy, naming the three it takes', async () => {
    const stub = freshFixture();
    const out = await inFixture(stub, async (instance) => {
      const replay = await instance.executor.execute(`export default () => 1;`, undefined, {
        onInterrupt: "replay",
      });
      const refusal = await instance.executor
        .execute(`export default () => 2;`, undefined, { onInterrupt: "retry" as never })
        .then(
          () => null,
          (error: { code: string; message: string }) => ({
            code: error.code,
            message: error.message,
          }),
        );
      return { replay, refusal };
    });
    expect(out.replay).toMatchObject({ state: "completed", result: 1 });
    expect(out.refusal?.code).toBe("bridge/invalid-argument");
    expect(out.refusal?.message).toContain('"replay"');
  });
});
