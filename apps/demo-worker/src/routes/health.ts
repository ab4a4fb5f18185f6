import { json } from "../http";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";

/** `GET /health`: proves the workspace Durable Object runs and its SQLite reads and writes. */
export const healthRoutes: Route[] = [
  {
    method: "GET",
    path: "/health",
    async handle(_request, env) {
      const { ok, checks } = await env.WORKSPACE.getByName(WORKSPACE_NAME).health();
      return json({ ok }, ok ? 200 : 503, { "dk-health-checks": String(checks) });
    },
  },
];
