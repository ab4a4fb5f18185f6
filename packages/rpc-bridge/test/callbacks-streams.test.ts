import { describe, expect, it } from "vitest";
import { countersOf, freshFixture, run } from "./helpers";

describe("callbacks and streams", () => {
  it("lets host code call a callback during the call it was passed to", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { callNow } from "test:probe";
      export default async function () { return callNow(async (n) => n * 2, 21); }
    `,
    );
    expect(execution.result).toBe(42);
  });

  it("throws a clear error in the host when a callback is used after its call returned", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { keep, useKept } from "test:probe";
      export default async function () {
        let called = false;
        await keep(() => { called = true; });
        const outcome = await useKept();
        return { outcome, called };
      }
    `,
    );
    expect(execution.result).toEqual({ outcome: "bridge/callback-expired", called: false });
    const { callbackError } = await countersOf(stub);
    expect(callbackError?.name).toBe("BridgeError");
    expect(callbackError?.message).toContain("valid only during the call it is passed to");
  });

  it("streams 10 MB to the program with backpressure, so the host never runs far ahead", async () => {
    const stub = freshFixture();
    const total = 10 * 1024 * 1024;
    const execution = await run(
      stub,
      `import { stream, consumed } from "test:probe";
       export default async function ({ total }) {
         const body = await stream(total, 64 * 1024);
         const reader = body.getReader();
         let bytes = 0;
         let reported = 0;
         for (;;) {
           const { done, value } = await reader.read();
           if (done) break;
           bytes += value.byteLength;
           if (bytes - reported >= 1024 * 1024) { reported = bytes; await consumed(bytes); }
         }
         return bytes;
       }`,
      { total },
    );
    expect(execution.result).toBe(total);
    const counters = await countersOf(stub);
    expect(counters.produced).toBe(total);
    // Produced bytes stay within a small window of what the program had read: bounded host memory.
    expect(counters.maxLead).toBeLessThan(2 * 1024 * 1024);
  });

  it("cancels a host stream the program still held when the run ended", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { stream } from "test:probe";
       export default async function () {
         const body = await stream(10 * 1024 * 1024, 64 * 1024);
         const { value } = await body.getReader().read();
         return value.byteLength;
       }`,
    );
    expect(execution.result).toBeGreaterThan(0);
    let counters = await countersOf(stub);
    for (let i = 0; i < 100 && !counters.streamCancelled; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      counters = await countersOf(stub);
    }
    expect(counters.streamCancelled).toBe(true);
    expect(counters.produced).toBeLessThan(1024 * 1024);
  });

  it("passes an AbortSignal argument to host code and mirrors its abort", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { signalled } from "test:probe";
      export default async function () {
        const controller = new AbortController();
        setTimeout(() => controller.abort(new Error("stop now")), 20);
        const live = await signalled({ signal: controller.signal });
        const already = await signalled({ signal: AbortSignal.abort(new Error("before")) });
        return { live, already };
      }
    `,
    );
    expect(execution.result).toEqual({
      live: { aborted: true, reason: "stop now" },
      already: { aborted: true, reason: "before" },
    });
  });

  it("calls a function a host call returned as a bridge call", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { fn } from "test:probe";
      export default async function () { const double = await fn(); return double(21); }
    `,
    );
    expect(execution.result).toBe(42);
  });
});
