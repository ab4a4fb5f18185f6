import { describe, expect, it } from "vitest";
import { countersOf, freshFixture, run } from "./helpers";

describe("per-call context", () => {
  it("gives every call, exported function or handle method, its own callId and key", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { context, make } from "test:probe";
      export default async function () {
        const a = await context();
        const b = await context();
        const probe = await make();
        const m1 = await probe.context();
        const m2 = await probe.context();
        const c = await context();
        return [a, b, m1, m2, c].map((x) => [x.callId, x.key]);
      }
    `,
    );
    expect(execution.state).toBe("completed");
    const id = execution.executionId;
    expect(execution.result).toEqual([
      [`${id}:1`, "1"],
      [`${id}:2`, "2"],
      [`${id}:3.1`, "3.1"],
      [`${id}:3.2`, "3.2"],
      [`${id}:4`, "4"],
    ]);
  });

  it("gives a refused call its key, so the next call's key is the following number", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { context, make, sleep } from "test:probe";
      const refused = (p) => p.then(() => "ran", (error) => error.code);
      export default async function () {
        const denied = await refused(sleep(1));
        const a = await context();
        const probe = await make();
        const write = await refused(probe.write());
        const m = await probe.context();
        return [denied, a.key, write, m.key];
      }
    `,
      undefined,
      { access: "read" },
    );
    expect(execution.state).toBe("completed");
    expect(execution.result).toEqual(["bridge/access-denied", "2", "bridge/access-denied", "3.2"]);
  });

  it("aborts a handle method's signal at its own deadline, not at its creator's", async () => {
    const stub = freshFixture();
    await stub.configure({ callTimeoutMs: 300 });
    const execution = await run(
      stub,
      `
      import { make } from "test:probe";
      export default async function () {
        const probe = await make();
        await new Promise((resolve) => setTimeout(resolve, 450));
        try { await probe.waitForAbort(); return "not cut off"; }
        catch (e) { return { name: e.name, code: e.code }; }
      }
    `,
    );
    expect(execution.result).toEqual({ name: "BridgeError", code: "bridge/call-timeout" });
    const counters = await countersOf(stub);
    const report = JSON.parse(counters.calls.at(-1) ?? "{}") as {
      abortedAt: number;
      deadline: number;
      creatorDeadline: number;
      creatorAbortedBefore: boolean;
      reason: string;
    };
    // The method's deadline is its own start + 300 ms, well after its creator's deadline had passed.
    expect(report.deadline).toBeGreaterThanOrEqual(report.creatorDeadline + 400);
    expect(report.abortedAt).toBeGreaterThanOrEqual(report.deadline);
    expect(report.creatorAbortedBefore).toBe(false);
    expect(report.reason).toBe("bridge/call-timeout");
  });

  it("hands each call the run's access and execution id", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { context } from "test:probe";
       export default async function () { return context(); }`,
      undefined,
      { access: "read", id: "exec-access" },
    );
    expect(execution.result).toMatchObject({ executionId: "exec-access", access: "read" });
  });
});
