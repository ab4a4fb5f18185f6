import { errorResponse, json } from "../http";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";

/** Inspection routes for tests and demos: what really ran, and what a stream holds. */
export const debugRoutes: Route[] = [
  {
    method: "GET",
    path: "/debug/executions/:runId",
    async handle(_request, env, { runId }) {
      return json(await env.WORKSPACE.getByName(WORKSPACE_NAME).taskExecutions(runId as string));
    },
  },
  {
    method: "GET",
    path: "/debug/streams/:streamId",
    async handle(_request, env, { streamId }) {
      const page = await env.WORKSPACE.getByName(WORKSPACE_NAME).streamChunks(streamId as string);
      if (!page) {
        return errorResponse(404, "demo/stream-not-found", `No stream "${streamId}" exists.`);
      }
      return json(page);
    },
  },
];
