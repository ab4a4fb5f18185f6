import { describe, expect, it } from "vitest";
import type { BridgeExecution } from "../src/index";
import { freshFixture, inFixture, run } from "./helpers";

/** What an adversarial program ended with: its execution, or the code execute() threw. */
type Ending = { execution: BridgeExecution } | { refused: string };

/**
 * Runs an adversarial program and, concurrently in the same object, a benign one: the benign run
 * must complete with the right result whatever the adversarial one does.
 */
async function againstBenign(source: string): Promise<Ending> {
  const stub = freshFixture();
  await stub.configure({ runTimeoutMs: 500 });
  const [ending, benign] = await Promise.all([
    run(stub, source).then(
      (execution): Ending => ({ execution }),
      (error: { code?: string }): Ending => ({ refused: String(error.code) }),
    ),
    run(stub, `import { twice } from "test:util"; export default async (n) => twice(n);`, 21),
  ]);
  expect(benign).toMatchObject({ state: "completed", result: 42 });
  return ending;
}

function failed(ending: Ending): NonNullable<BridgeExecution["error"]> {
  if (!("execution" in ending)) throw new Error(`refused before running: ${ending.refused}`);
  expect(ending.execution.state).toBe("failed");
  return ending.execution.error ?? { name: "", message: "" };
}

/** A program awaiting a message on its own WebSocketPair end, which nothing ever sends; `extra` runs first. */
function awaitingSocketPair(extra: string): string {
  return `export default async function () {
    const [a] = Object.values(new WebSocketPair());
    a.accept();
    ${extra}
    return await new Promise((resolve) => a.addEventListener("message", (e) => resolve(e.data)));
  }`;
}

describe("adversarial programs", () => {
  it("fails a program calling fetch (no network) and leaves the host healthy", async () => {
    const error = failed(
      await againstBenign(
        `export default async function () { return await fetch("https://example.com/"); }`,
      ),
    );
    expect(error).toMatchObject({ name: "Error" });
    expect(error.message).toContain("not permitted to access the internet");
    expect(error.code).toBeUndefined();
  });

  it("fails a program opening a WebSocket (no network) with the platform's own Error, no code", async () => {
    const error = failed(
      await againstBenign(
        `export default async function () {
           const ws = new WebSocket("wss://example.com");
           return await new Promise((resolve, reject) => {
             ws.addEventListener("open", () => resolve("open"));
             ws.addEventListener("error", () => reject(new Error("socket error")));
             ws.addEventListener("close", () => resolve("closed"));
           });
         }`,
      ),
    );
    expect(error).toMatchObject({ name: "Error" });
    expect(error.message).toContain("not permitted to access the internet");
    expect(error.code).toBeUndefined();
  });

  it("fails a program awaiting a WebSocketPair event that never comes with bridge/isolate-failed (the runtime sees the hang)", async () => {
    const started = Date.now();
    const error = failed(await againstBenign(awaitingSocketPair("")));
    expect(error.code).toBe("bridge/isolate-failed");
    expect(error.message).toContain("hung");
    expect(Date.now() - started).toBeLessThan(500);
  });

  it("ends a program awaiting a WebSocketPair event while a timer keeps it alive with bridge/run-timeout, at its run timeout", async () => {
    const started = Date.now();
    const error = failed(await againstBenign(awaitingSocketPair("setInterval(() => {}, 50);")));
    expect(error.code).toBe("bridge/run-timeout");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("refuses a program importing cloudflare:sockets (connect) before it runs", async () => {
    expect(
      await againstBenign(
        `import { connect } from "cloudflare:sockets"; export default async () => connect("example.com:80");`,
      ),
    ).toEqual({ refused: "bridge/not-found" });
  });

  it("fails a program using caches (none configured)", async () => {
    const error = failed(
      await againstBenign(
        `export default async function () { const c = await caches.open("x"); await c.put("https://a/", new Response("x")); return "cached"; }`,
      ),
    );
    expect(error).toMatchObject({ name: "Error" });
    expect(error.message).toContain("No Cache");
    expect(error.code).toBeUndefined();
  });

  it("fails a program using eval or new Function with the platform's own EvalError, no code", async () => {
    for (const source of [
      `export default async () => eval("1 + 1");`,
      `export default async () => new Function("return 1")();`,
    ]) {
      const error = failed(await againstBenign(source));
      expect(error.name).toBe("EvalError");
      expect(error.code).toBeUndefined();
    }
  });

  it("refuses import() of unknown and private specifiers before the program runs", async () => {
    expect(await againstBenign(`export default async () => import("test:nope");`)).toEqual({
      refused: "bridge/not-found",
    });
    expect(
      await againstBenign(`const m = "test:private"; export default async () => import(m);`),
    ).toEqual({ refused: "bridge/invalid-program" });
    expect(await againstBenign(`export default async () => import("test:private");`)).toEqual({
      refused: "bridge/module-private",
    });
  });

  it("carries __proto__ and constructor keys as own data, polluting nothing", async () => {
    const ending = await againstBenign(
      `import { context } from "test:probe";
       export default async function () {
         const a = JSON.parse('{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"x": 1}}}');
         await context(a);
         return a;
       }`,
    );
    if (!("execution" in ending)) throw new Error("refused");
    expect(ending.execution.state).toBe("completed");
    const result = ending.execution.result as Record<string, unknown>;
    expect(Object.keys(result)).toEqual(["__proto__", "constructor"]);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it("fails a program throwing non-Errors with an Error record", async () => {
    expect(
      failed(await againstBenign(`export default async () => { throw "a string"; };`)),
    ).toMatchObject({ name: "Error", message: "a string" });
    expect(
      failed(await againstBenign(`export default async () => { throw { n: 1 }; };`)).name,
    ).toBe("Error");
  });

  it("refuses cyclic values with bridge/unserializable, as arguments and as the result", async () => {
    const ending = await againstBenign(
      `import { context } from "test:probe";
       export default async function () { const a = {}; a.a = a; try { await context(a); return "crossed"; } catch (e) { return e.code; } }`,
    );
    expect("execution" in ending && ending.execution.result).toBe("bridge/unserializable");
    expect(
      failed(
        await againstBenign(`export default async () => { const a = {}; a.a = a; return a; };`),
      ).code,
    ).toBe("bridge/unserializable");
  });

  it("ends a program waiting on a never-resolving host call with bridge/run-timeout", async () => {
    const error = failed(
      await againstBenign(`import { hang } from "test:probe"; export default async () => hang();`),
    );
    expect(error.code).toBe("bridge/run-timeout");
  });

  it("ends a program looping on calls with bridge/run-timeout (its timer starved or not), and it sends at most one call after", async () => {
    const stub = freshFixture();
    await stub.configure({ runTimeoutMs: 500 });
    const [execution, benign] = await Promise.all([
      run(
        stub,
        `import { context } from "test:probe";
         export default async function () { for (;;) { try { await context(); } catch {} } }`,
      ),
      // In another object: within the same object a tight call loop starves other runs until it halts.
      run(freshFixture(), `export default async (n) => n * 2;`, 21),
    ]);
    expect(benign).toMatchObject({ state: "completed", result: 42 });
    expect(execution.error?.code).toBe("bridge/run-timeout");
    const before = await inFixture(stub, (instance) => instance.events.length);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await inFixture(stub, (instance) => instance.events.length);
    expect(after - before).toBeLessThanOrEqual(1);
  });
});
