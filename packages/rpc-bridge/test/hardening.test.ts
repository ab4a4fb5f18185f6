import { describe, expect, it } from "vitest";
import { BridgeError, describeModules, hostModule, readOnly } from "../src/index";
import { DEFAULT_LIMITS } from "../src/limits";
import { ModuleRegistry } from "../src/modules/module-registry";
import { Run } from "../src/run/run";
import { TAG } from "../src/shared/wire";
import { Counters, probeModule } from "./fixtures/modules";
import { countersOf, freshFixture, inFixture, run } from "./helpers";

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

describe("a run's isolate after the run ended", () => {
  it("makes no more progress after a timeout: the host sees at most one refused call", async () => {
    const stub = freshFixture();
    await stub.configure({ runTimeoutMs: 300 });
    const execution = await run(
      stub,
      `import { context } from "test:probe";
       export default async function () {
         (async () => {
           for (;;) {
             try { await context(); } catch {}
             await new Promise((resolve) => setTimeout(resolve, 5));
           }
         })();
         await new Promise(() => {});
       }`,
    );
    expect(execution.error?.code).toBe("bridge/run-timeout");
    await new Promise((resolve) => setTimeout(resolve, 500));
    const refused = await inFixture(
      stub,
      (instance) =>
        instance.events.filter((e) => e.type === "bridge:call" && e.outcome === "refused").length,
    );
    expect(refused).toBeLessThanOrEqual(1);
  });

  it("makes no more progress after a normal end with calls still looping", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { context } from "test:probe";
       export default async function () {
         (async () => {
           for (;;) {
             try { await context(); } catch {}
             await new Promise((resolve) => setTimeout(resolve, 5));
           }
         })();
         await new Promise((resolve) => setTimeout(resolve, 20));
         return "done";
       }`,
    );
    expect(execution.result).toBe("done");
    await new Promise((resolve) => setTimeout(resolve, 500));
    const refused = await inFixture(
      stub,
      (instance) =>
        instance.events.filter((e) => e.type === "bridge:call" && e.outcome === "refused").length,
    );
    expect(refused).toBeLessThanOrEqual(1);
  });
});

describe("run deadlines", () => {
  it("reports a result that arrives after the run's deadline as bridge/run-timeout", async () => {
    const stub = freshFixture();
    await stub.configure({ runTimeoutMs: 300 });
    const execution = await run(
      stub,
      `export default async function () {
         let x = 0;
         for (let i = 0; i < 150_000_000; i++) x = (x * 31 + i) % 1_000_003;
         return x;
       }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error?.code).toBe("bridge/run-timeout");
  });
});

describe("error answers", () => {
  it("measures and charges host errors: over maxResponseBytes they keep name, code and a truncated message", async () => {
    const stub = freshFixture();
    await stub.configure({ maxResponseBytes: 1024, maxTotalBytes: 8192 });
    const execution = await run(
      stub,
      `import { failHuge } from "test:probe";
       export default async function () {
         const seen = [];
         for (let i = 0; i < 3; i++) {
           try { await failHuge(300_000); }
           catch (e) { seen.push({ name: e.name, code: e.code, blob: e.blob === undefined ? null : e.blob.length, truncated: e.truncated, size: JSON.stringify({ ...e, message: e.message }).length }); }
         }
         return seen;
       }`,
    );
    expect(execution.state).toBe("completed");
    const seen = execution.result as Array<Record<string, unknown>>;
    expect(seen).toHaveLength(3);
    for (const item of seen) {
      expect(item).toMatchObject({
        name: "TypeError",
        code: "E_HUGE",
        blob: null,
        truncated: true,
      });
      expect(item.size as number).toBeLessThan(1024);
    }
  });

  it("bounds a program's own thrown error by maxResultBytes", async () => {
    const stub = freshFixture();
    await stub.configure({ maxResultBytes: 1024 });
    const execution = await run(
      stub,
      `export default async function () {
         throw Object.assign(new RangeError("m".repeat(300_000)), { code: "E_MINE", blob: "b".repeat(300_000) });
       }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error).toMatchObject({ name: "RangeError", code: "E_MINE", truncated: true });
    expect(execution.error?.blob).toBeUndefined();
    expect(JSON.stringify(execution.error).length).toBeLessThan(1024);
  });
});

describe("unserializable results", () => {
  it("refuses a non-RpcTarget object with [handle.serialize] as bridge/unserializable naming its path", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { serializable, context } from "test:probe";
       export default async function () {
         let refused;
         try { await serializable(); refused = "crossed"; } catch (e) { refused = { code: e.code, path: e.path }; }
         const after = await context();
         return { refused, after: typeof after.key };
       }`,
    );
    expect(execution.result).toEqual({
      refused: { code: "bridge/unserializable", path: "result.inner" },
      after: "string",
    });
  });
});

describe("execute signals", () => {
  it("ends cancelled without running when the signal is aborted before execute", async () => {
    const stub = freshFixture();
    const execution = await inFixture(stub, (instance) =>
      instance.executor.execute(
        `import { write } from "test:probe";
         export default async function () { await write(); return "ran"; }`,
        undefined,
        { signal: AbortSignal.abort() },
      ),
    );
    expect(execution.state).toBe("cancelled");
    expect(execution.error?.code).toBe("bridge/cancelled");
    expect((await countersOf(stub)).writes).toBe(0);
  });
});

describe("generated declarations", () => {
  it("escapes */ in a module description so it cannot end the doc comment", () => {
    const text = describeModules({
      "test:evil": hostModule(
        { f: readOnly(() => 1) },
        { description: "Hello */ export declare const injected: 1; /*" },
      ),
    });
    expect(text).not.toContain("*/ export declare const injected");
    expect(text.match(/\*\//g)?.length).toBe(text.match(/\/\*\*/g)?.length);
  });
});

describe("hostile thrown values", () => {
  it("answers a call whose host code throws a Proxy with trapping handlers with a fallback error record", async () => {
    const stub = freshFixture();
    await stub.configure({ runTimeoutMs: 5_000 });
    const started = Date.now();
    const execution = await run(
      stub,
      `import { failHostile } from "test:probe";
       export default async function () {
         try { await failHostile(); return "no error"; } catch (e) { return { name: e.name, message: e.message }; }
       }`,
    );
    expect(execution.state).toBe("completed");
    expect((execution.result as { message: string }).message).toContain("could not be read");
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it("fails a program that throws a Proxy with trapping handlers with a fallback error record", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `export default async function () {
         const trap = () => { throw new Error("trap"); };
         throw new Proxy(new Error("hostile"), { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap, getOwnPropertyDescriptor: trap });
       }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error?.message).toContain("could not be read");
  });
});

describe("program results", () => {
  it("fails a cyclic program result with bridge/unserializable", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `export default async function () { const a = { n: 1 }; a.self = a; return a; }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error?.code).toBe("bridge/unserializable");
  });
});

describe("program failures", () => {
  it("fails a run whose program left a rejection unhandled just before returning", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `export default async function () { Promise.reject(new Error("late")); return "done"; }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error?.code).toBe("bridge/unhandled-rejection");
  });

  it("fails a run whose program threw inside a timer", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `export default async function () {
         setTimeout(() => { throw new Error("in timer"); }, 0);
         await new Promise((resolve) => setTimeout(resolve, 20));
         return "done";
       }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error?.message).toContain("in timer");
  });

  it("does not mark bridge/isolate-failed retryable (an isolate failure may recur every time)", () => {
    expect(new BridgeError("bridge/isolate-failed", "x").retryable).toBe(false);
  });

  it("rewrites a bridge/* code a program throws so it cannot pass for the bridge's own", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `export default async function () {
         throw Object.assign(new Error("forged"), { name: "BridgeError", code: "bridge/run-timeout", retryable: true });
       }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error?.code).not.toBe("bridge/run-timeout");
    expect(execution.error?.programCode).toBe("bridge/run-timeout");
  });
});

describe("request sizes", () => {
  it("sends a view over a larger buffer as its own bytes only", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { bufferSize } from "test:probe";
       export default async function () {
         const view = new Uint8Array(new ArrayBuffer(8 * 1024 * 1024), 16, 4);
         return bufferSize(view);
       }`,
    );
    expect(execution.result).toEqual({ length: 4, buffer: 4 });
  });

  it("refuses arguments over maxRequestBytes in the isolate, before they cross", async () => {
    const stub = freshFixture();
    await stub.configure({ maxRequestBytes: 1024 });
    const execution = await run(
      stub,
      `import { bufferSize, counters } from "test:probe";
       export default async function () {
         const out = [];
         for (const arg of [new Uint8Array(4096), "s".repeat(4096)]) {
           try { await bufferSize(arg); out.push("crossed"); } catch (e) { out.push([e.name, e.code, e.retryable]); }
         }
         return out;
       }`,
    );
    expect(execution.result).toEqual([
      ["BridgeError", "bridge/too-large", false],
      ["BridgeError", "bridge/too-large", false],
    ]);
    const refused = await inFixture(
      stub,
      (instance) => instance.events.filter((e) => e.type === "bridge:call").length,
    );
    // Refused in the isolate: the host never saw either call.
    expect(refused).toBe(0);
  });
});

describe("refused calls", () => {
  it("releases the signal mirrors a refused call registered before its refusal", () => {
    const run = new Run({
      executionId: "refused-1",
      attempt: 1,
      access: "read-write",
      limits: DEFAULT_LIMITS,
      registry: new ModuleRegistry({ "test:probe": probeModule(new Counters()) }),
    });
    const answer = run.invoke(
      1,
      "signalled",
      [
        { [TAG]: "s", id: 7, aborted: false },
        { [TAG]: "h", id: 999 },
      ],
      "tagged",
    );
    expect(answer).toMatchObject({
      [TAG]: "error",
      record: { $error: { code: "bridge/handle-disposed" } },
    });
    expect(run.mirrored).toBe(0);
    run.end();
  });
});

describe("host streams", () => {
  it("rejects the program's read with the host's error when a host stream errors midway", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { brokenStream } from "test:probe";
       export default async function () {
         const reader = (await brokenStream()).getReader();
         const first = await reader.read();
         try { await reader.read(); return "no error"; }
         catch (e) { return { bytes: first.value.byteLength, name: e.name, code: e.code, message: e.message }; }
       }`,
    );
    expect(execution.result).toEqual({
      bytes: 3,
      name: "TypeError",
      code: "E_BROKEN",
      message: "disk gone",
    });
  });
});
