import { errorResponse, json } from "../http";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";

/**
 * Inspection routes for tests and demos: what really ran, and what a stream holds. They exist only
 * when the dev config sets `DEMO_DEBUG=on`.
 */
export const debugRoutes: Route[] = [
  {
    method: "GET",
    path: "/debug/executions/:runId",
    debug: true,
    async handle(_request, env, { runId }) {
      const executions = await env.WORKSPACE.getByName(WORKSPACE_NAME).taskExecutions(
        runId as string,
      );
      if (!executions) {
        return errorResponse(404, "tasks/not-found", `No run "${runId}" exists; check the run id.`);
      }
      return json(executions);
    },
  },
  {
    method: "GET",
    path: "/debug/streams/:streamId",
    debug: true,
    async handle(_request, env, { streamId }) {
      const page = await env.WORKSPACE.getByName(WORKSPACE_NAME).streamChunks(streamId as string);
      if (!page) {
        return errorResponse(404, "demo/stream-not-found", `No stream "${streamId}" exists.`);
      }
      return json(page);
    },
  },
];
