import { describe, expect, it } from "vitest";
import { countersOf, freshFixture, inFixture, run } from "./helpers";

describe("disposal", () => {
  it("disposes every object a run still holds when it ends", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { makeMany, make } from "test:probe";
      import { createJob } from "codemode:jobs";
      export default async function () {
        const { probes } = await makeMany(3);
        const one = await make();
        const job = await createJob({ name: "kept" });
        const run = await job.start();
        return probes.length;
      }
    `,
    );
    expect(execution.result).toBe(3);
    // 3 + 1 probes, the job and its run.
    expect((await countersOf(stub)).disposed).toBe(6);
    const event = await inFixture(stub, (instance) =>
      instance.events.find((e) => e.type === "bridge:execution" && e.state === "completed"),
    );
    expect(event).toMatchObject({ disposed: 6 });
  });

  it("disposes held objects when the run fails, times out or is cancelled", async () => {
    const stub = freshFixture();
    await stub.configure({ runTimeoutMs: 300 });
    const failed = await run(
      stub,
      `
      import { makeMany } from "test:probe";
      export default async function () { await makeMany(2); throw new Error("boom"); }
    `,
    );
    expect(failed.state).toBe("failed");
    expect((await countersOf(stub)).disposed).toBe(2);
    const timedOut = await run(
      stub,
      `
      import { makeMany, hang } from "test:probe";
      export default async function () { await makeMany(2); await hang(); }
    `,
    );
    expect(timedOut.error?.code).toBe("bridge/run-timeout");
    expect((await countersOf(stub)).disposed).toBe(4);
    const cancelled = await inFixture(stub, async (instance) => {
      const pending = instance.executor.execute(
        `import { makeMany, hang } from "test:probe";
         export default async function () { await makeMany(2); await hang(); }`,
        undefined,
        { id: "to-cancel" },
      );
      const made = () =>
        instance.events.some(
          (e) =>
            e.type === "bridge:call" &&
            e.executionId === "to-cancel" &&
            e.label === "test:probe.makeMany",
        );
      while (!made()) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      instance.executor.cancel("to-cancel", "test");
      return pending;
    });
    expect(cancelled.state).toBe("cancelled");
    expect(cancelled.error?.code).toBe("bridge/cancelled");
    expect((await countersOf(stub)).disposed).toBe(6);
  });

  it("disposes an object early with using, and refuses calls on it afterwards", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { make, counters } from "test:probe";
      export default async function () {
        let escaped;
        {
          using probe = await make();
          escaped = probe;
          await probe.read();
        }
        const afterBlock = (await counters()).disposed;
        try { await escaped.read(); return "called"; }
        catch (e) { return { afterBlock, code: e.code }; }
      }
    `,
    );
    expect(execution.result).toEqual({ afterBlock: 1, code: "bridge/handle-disposed" });
    expect((await countersOf(stub)).disposed).toBe(1);
  });

  it("keeps one handle per object: returning it again gives the same object in the program", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { make } from "test:probe";
      export default async function () {
        const probe = await make();
        const again = await probe.self();
        return again === probe;
      }
    `,
    );
    expect(execution.result).toBe(true);
    expect((await countersOf(stub)).disposed).toBe(1);
  });
});
