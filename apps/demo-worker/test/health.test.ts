import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Workspace } from "../src/workspace";

describe("GET /health", () => {
  it("answers ok from the workspace Durable Object and counts the check in SQLite", async () => {
    const response = await exports.default.fetch("http://demo/health");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });

    const stub = env.WORKSPACE.getByName("default");
    const checks = await runInDurableObject(stub, (_instance: Workspace, state) => {
      return state.storage.sql.exec<{ checks: number }>("SELECT checks FROM demo_health").one()
        .checks;
    });
    expect(checks).toBe(1);
  });

  it("answers unknown routes with a coded 404", async () => {
    const response = await exports.default.fetch("http://demo/nope");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: { code: "demo/not-found", message: "No route for GET /nope." },
    });
  });
});
