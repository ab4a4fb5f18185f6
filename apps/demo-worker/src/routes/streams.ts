import { errorResponse } from "../http";
import { HUB_NAME, PROTOCOL_BASE_PATH } from "../protocol-stream";
import { RequestPolicy } from "../request-policy";
import type { Route, RouteHandler } from "../router";
import { protocolObject } from "../stream-objects";
import { WORKSPACE_NAME } from "../workspace";

/**
 * Forwards a protocol request to the object of the stream its path names (`/v1/stream/<id>`); a
 * run's events (`/v1/stream/runs/<runId>`) live in the workspace object, with the run.
 */
const toStreamObject: RouteHandler = (request, env, { rest }) => {
  if (!rest)
    return errorResponse(404, "demo/not-found", `Name a stream: ${PROTOCOL_BASE_PATH}/<id>.`);
  if (rest === "__ds" || rest.startsWith("__ds/")) {
    return env.SUBSCRIPTIONS.getByName(HUB_NAME).fetch(request);
  }
  return protocolObject(env, rest).fetch(request);
};

/**
 * The stream routes:
 * - `/v1/stream/*`: the Durable Streams HTTP protocol (PUT create, POST append/close, GET catch-up,
 *   long-poll and SSE reads, HEAD, DELETE, CORS preflight), one Durable Object per stream path;
 * - `GET /streams/:id/sse`: a stream of the workspace object as Server-Sent Events, resumable with
 *   `Last-Event-ID` or `?from=N`; a subscriber may arrive before the stream exists (it waits), and
 *   pages of `DEMO_ALLOWED_ORIGINS` may read it (`OPTIONS` answers their preflight).
 */
export const streamRoutes: Route[] = [
  ...["GET", "PUT", "POST", "DELETE", "OPTIONS"].map(
    (method): Route => ({
      method,
      path: `${PROTOCOL_BASE_PATH}/*`,
      handle: toStreamObject,
      protocol: true,
    }),
  ),
  {
    method: "GET",
    path: "/streams/:id/sse",
    handle: (request, env, { id }) =>
      env.WORKSPACE.getByName(WORKSPACE_NAME).streamSse(
        id as string,
        request,
        new RequestPolicy(env).origins,
      ),
  },
  {
    method: "OPTIONS",
    path: "/streams/:id/sse",
    handle: (request, env) => ssePreflight(request, new RequestPolicy(env).origins),
  },
];

/**
 * The CORS preflight of `GET /streams/:id/sse`: an allowed origin (`DEMO_ALLOWED_ORIGINS`) may
 * send `GET` with `Last-Event-ID`; any other origin gets no access header, so its browser stops.
 */
function ssePreflight(request: Request, allowed: string[]): Response {
  const origin = request.headers.get("origin")?.toLowerCase();
  const headers = new Headers({ vary: "Origin" });
  if (origin !== undefined && allowed.includes(origin)) {
    headers.set("access-control-allow-origin", origin);
    headers.set("access-control-allow-methods", "GET");
    headers.set("access-control-allow-headers", "Last-Event-ID");
    headers.set("access-control-max-age", "600");
  }
  return new Response(null, { status: 204, headers });
}
