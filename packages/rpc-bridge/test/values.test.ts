import { describe, expect, it } from "vitest";
import { freshFixture, run } from "./helpers";

describe("values across the bridge", () => {
  it("carries Uint8Array arguments and results", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { reverse } from "test:probe";
      export default async function () {
        const out = await reverse(new Uint8Array([1, 2, 3]));
        return { isBytes: out.isBytes, reversed: Array.from(out.reversed), resultIsBytes: out.reversed instanceof Uint8Array };
      }
    `,
    );
    expect(execution.result).toEqual({ isBytes: true, reversed: [3, 2, 1], resultIsBytes: true });
  });

  it("carries codec types and rebuilds nested errors and URLs", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { when } from "test:probe";
      export default async function () {
        const v = await when();
        return {
          date: v.date instanceof Date && v.date.getTime() === 0,
          map: v.map instanceof Map && v.map.get("a") === 1,
          big: typeof v.big === "bigint",
          url: v.url instanceof URL && v.url.pathname === "/x",
          error: v.nested.error instanceof RangeError && v.nested.error.code === "E_IN",
        };
      }
    `,
    );
    expect(execution.result).toEqual({ date: true, map: true, big: true, url: true, error: true });
  });

  it("delivers a rejected host promise as the same error, never as a host unhandled rejection", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { fail, failLater } from "test:probe";
      export default async function () {
        const out = [];
        for (const f of [fail, failLater]) {
          try { await f(); } catch (e) { out.push([e.constructor.name, e.message, e.code ?? null, e.retryable ?? null]); }
        }
        return out;
      }
    `,
    );
    expect(execution.result).toEqual([
      ["TypeError", "x", "E_X", true],
      ["RangeError", "later", null, null],
    ]);
  });

  it("fails the run with the program's own error when it throws", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      export default async function () { throw Object.assign(new SyntaxError("bad"), { code: "E_PROGRAM" }); }
    `,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error).toEqual({ name: "SyntaxError", message: "bad", code: "E_PROGRAM" });
  });

  it("refuses a program result that is not data", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { make } from "test:probe";
      export default async function () { return { probe: await make() }; }
    `,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error?.code).toBe("bridge/unserializable");
  });

  it("fails a run whose result is over maxResultBytes with bridge/too-large naming the limit", async () => {
    const stub = freshFixture();
    await stub.configure({ maxResultBytes: 1024 });
    const execution = await run(
      stub,
      `export default async function () { return "x".repeat(5000); }`,
    );
    expect(execution.state).toBe("failed");
    expect(execution.error).toMatchObject({ code: "bridge/too-large", limit: "maxResultBytes" });
  });
});
