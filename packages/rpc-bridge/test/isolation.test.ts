import { describe, expect, it } from "vitest";
import { freshFixture, inFixture, run } from "./helpers";

describe("isolation", () => {
  it("gives program code no network: fetch fails", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      export default async function () {
        try { const r = await fetch("https://example.com/"); return "reached " + r.status; }
        catch (e) { return "refused: " + e.message; }
      }
    `,
    );
    expect(execution.result).toMatch(/^refused: /);
  });

  it("gives program code no bindings and no way to import the runtime's", async () => {
    const stub = freshFixture();
    const execution = await inFixture(stub, (instance) =>
      instance.executor
        .execute(`
          export default async function () {
            const s = await import("cloudflare:sockets");
            return typeof s.connect;
          }
        `)
        .catch((error: { code?: string }) => ({ refusedAtStart: error.code })),
    );
    // A literal import() of an unconfigured module is refused before the program runs.
    expect(execution).toEqual({ refusedAtStart: "bridge/not-found" });
    const plain = await run(
      stub,
      `
      export default async function () {
        return ["FIXTURE", "LOADER", "env", "__dk_bridge"].filter((n) => n in globalThis);
      }
    `,
    );
    expect(plain.result).toEqual([]);
  });
});
