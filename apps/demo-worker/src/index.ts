import type { Env } from "./env";
import { errorResponse, json } from "./http";

export { Workspace } from "./workspace";

/** The Durable Object that answers workspace-wide routes. */
const WORKSPACE_NAME = "default";

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/health" && request.method === "GET") {
      const { ok, checks } = await env.WORKSPACE.getByName(WORKSPACE_NAME).health();
      return json({ ok }, ok ? 200 : 503, { "dk-health-checks": String(checks) });
    }
    return errorResponse(404, "demo/not-found", `No route for ${request.method} ${url.pathname}.`);
  },
} satisfies ExportedHandler<Env>;
