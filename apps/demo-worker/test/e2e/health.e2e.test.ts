import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

describe("demo under wrangler dev", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("answers GET /health with ok from a real wrangler dev", async () => {
    const response = await fetch(`${dev.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
  });

  it("keeps the /debug/* routes off (404) unless the dev config sets DEMO_DEBUG=on", async () => {
    for (const path of ["/debug/jobs", "/debug/executions/any", "/debug/streams/any"]) {
      const response = await fetch(`${dev.url}${path}`);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: { code: "demo/not-found" } });
    }
  });

  it("keeps Durable Object state across a SIGKILL and restart", async () => {
    const before = Number((await fetch(`${dev.url}/health`)).headers.get("dk-health-checks"));
    expect(before).toBeGreaterThan(0);
    await dev.kill();
    dev = await dev.restart();
    const response = await fetch(`${dev.url}/health`);
    expect(await response.json()).toEqual({ ok: true });
    // The readiness probe of the restart counted one check, this request another.
    expect(Number(response.headers.get("dk-health-checks"))).toBe(before + 2);
  });
});
