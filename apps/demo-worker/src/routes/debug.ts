import { errorResponse, json } from "../http";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";

/** A run's debug value as JSON, or the tasks' 404 when the run does not exist. */
async function runAnswer(runId: string, value: Promise<unknown>): Promise<Response> {
  const found = await value;
  if (found === null) {
    return errorResponse(404, "tasks/not-found", `No run "${runId}" exists; check the run id.`);
  }
  return json(found);
}

/**
 * Inspection routes for tests and demos: what really ran, and what a stream holds. They exist only
 * when the dev config sets `DEMO_DEBUG=on`.
 */
export const debugRoutes: Route[] = [
  {
    method: "GET",
    path: "/debug/executions/:runId",
    debug: true,
    handle: (_request, env, { runId }) =>
      runAnswer(
        runId as string,
        env.WORKSPACE.getByName(WORKSPACE_NAME).taskExecutions(runId as string),
      ),
  },
  {
    method: "GET",
    path: "/debug/executions/:runId/buffered-events",
    debug: true,
    handle: (_request, env, { runId }) =>
      runAnswer(
        runId as string,
        env.WORKSPACE.getByName(WORKSPACE_NAME).bufferedEvents(runId as string),
      ),
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
