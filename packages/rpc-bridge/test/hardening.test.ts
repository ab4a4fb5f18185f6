import { describe, expect, it } from "vitest";
import { countersOf, freshFixture, run } from "./helpers";

describe("hardening against adversarial programs", () => {
  it("hands objects passed to program callbacks through the bridge: access, context and disposal apply", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { handOver } from "test:probe";
       export default async function () {
         return handOver(async (probe) => {
           const read = await probe.read();
           const context = await probe.context();
           let write;
           try { await probe.write(); write = "wrote"; } catch (e) { write = e.code; }
           return { read, write, key: context.key, tag: Object.prototype.toString.call(probe) };
         });
       }`,
      undefined,
      { access: "read" },
    );
    expect(execution.state).toBe("completed");
    const result = execution.result as { read: string; write: string; key: string; tag: string };
    expect(result.read).toBe("read");
    expect(result.write).toBe("bridge/access-denied");
    expect(typeof result.key).toBe("string");
    expect(result.tag).toBe("[object test:probe#Probe]");
    const counters = await countersOf(stub);
    expect(counters.writes).toBe(0);
    expect(counters.disposed).toBe(1);
  });

  it("counts the calls a host makes to program callbacks toward maxCalls", async () => {
    const stub = freshFixture();
    await stub.configure({ maxCalls: 4 });
    const execution = await run(
      stub,
      `import { callMany } from "test:probe";
       export default async function () { return callMany(async (n) => n, 5); }`,
    );
    expect(execution.result).toEqual([0, 1, 2, "bridge/limit-calls", "bridge/limit-calls"]);
  });
});
