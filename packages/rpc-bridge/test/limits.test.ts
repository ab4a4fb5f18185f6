import { describe, expect, it } from "vitest";
import { countersOf, freshFixture, run } from "./helpers";

describe("limits", () => {
  it("counts handle-method calls: with maxCalls 3 the fourth call, a method, is refused and does not run", async () => {
    const stub = freshFixture();
    await stub.configure({ maxCalls: 3 });
    const execution = await run(
      stub,
      `
      import { make } from "test:probe";
      export default async function () {
        const probe = await make();
        await probe.read();
        await probe.read();
        try { await probe.write(); return "ran"; }
        catch (e) { return { name: e.name, code: e.code, retryable: e.retryable }; }
      }
    `,
    );
    expect(execution.result).toEqual({
      name: "BridgeError",
      code: "bridge/limit-calls",
      retryable: false,
    });
    const counters = await countersOf(stub);
    expect(counters.reads).toBe(2);
    expect(counters.writes).toBe(0);
  });

  it("refuses a call beyond maxConcurrentCalls as retryable", async () => {
    const stub = freshFixture();
    await stub.configure({ maxConcurrentCalls: 2 });
    const execution = await run(
      stub,
      `
      import { sleep } from "test:probe";
      export default async function () {
        const settled = await Promise.allSettled([sleep(50), sleep(50), sleep(50)]);
        const after = await sleep(1);
        return { settled: settled.map((s) => s.status === "fulfilled" ? s.value : [s.reason.code, s.reason.retryable]), after };
      }
    `,
    );
    expect(execution.result).toEqual({
      settled: ["1", "2", ["bridge/limit-concurrency", true]],
      // The refused third call took key 3.
      after: "4",
    });
  });

  it("refuses arguments over maxRequestBytes before the call runs", async () => {
    const stub = freshFixture();
    await stub.configure({ maxRequestBytes: 256 });
    const execution = await run(
      stub,
      `
      import { make } from "test:probe";
      export default async function () {
        const probe = await make();
        try { await probe.write("x".repeat(1000)); return "ran"; }
        catch (e) { return [e.code, e.path, e.limit]; }
      }
    `,
    );
    expect(execution.result).toEqual(["bridge/too-large", "args", "maxRequestBytes"]);
    expect((await countersOf(stub)).writes).toBe(0);
  });

  it("fails a call whose result is over maxResponseBytes", async () => {
    const stub = freshFixture();
    await stub.configure({ maxResponseBytes: 512 });
    const execution = await run(
      stub,
      `
      import { big } from "test:probe";
      export default async function () {
        const small = await big(10);
        try { await big(2000); return "delivered"; } catch (e) { return [small.length, e.code, e.limit]; }
      }
    `,
    );
    expect(execution.result).toEqual([10, "bridge/too-large", "maxResponseBytes"]);
  });

  it("refuses calls once the run's requests and responses exceed maxTotalBytes", async () => {
    const stub = freshFixture();
    await stub.configure({ maxTotalBytes: 3000 });
    const execution = await run(
      stub,
      `
      import { big } from "test:probe";
      export default async function () {
        const sizes = [];
        for (let i = 0; i < 5; i++) {
          try { sizes.push((await big(1000)).length); } catch (e) { sizes.push(e.code + " " + e.limit); }
        }
        return sizes;
      }
    `,
    );
    expect(execution.result).toEqual([
      1000,
      1000,
      "bridge/too-large maxTotalBytes",
      "bridge/too-large maxTotalBytes",
      "bridge/too-large maxTotalBytes",
    ]);
  });

  it("cuts off a call at its deadline with a retryable call-timeout", async () => {
    const stub = freshFixture();
    await stub.configure({ callTimeoutMs: 100 });
    const execution = await run(
      stub,
      `
      import { hang } from "test:probe";
      export default async function () {
        try { await hang(); return "returned"; } catch (e) { return [e.code, e.retryable]; }
      }
    `,
    );
    expect(execution.result).toEqual(["bridge/call-timeout", true]);
  });

  it("stops a run at runTimeoutMs and fails it with run-timeout", async () => {
    const stub = freshFixture();
    await stub.configure({ runTimeoutMs: 200 });
    const execution = await run(
      stub,
      `
      import { hang } from "test:probe";
      export default async function () { await hang(); return "returned"; }
    `,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error).toMatchObject({ name: "BridgeError", code: "bridge/run-timeout" });
  });

  it("refuses objects beyond maxHandles and releases the refused ones", async () => {
    const stub = freshFixture();
    await stub.configure({ maxHandles: 3 });
    const execution = await run(
      stub,
      `
      import { makeMany } from "test:probe";
      export default async function () {
        const first = await makeMany(2);
        try { await makeMany(2); return "delivered"; } catch (e) { return [first.probes.length, e.code]; }
      }
    `,
    );
    expect(execution.result).toEqual([2, "bridge/limit-handles"]);
    // The two refused probes (one was registered before the limit hit) and the two held ones are all released.
    expect((await countersOf(stub)).disposed).toBe(4);
  });
});
