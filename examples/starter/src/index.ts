import type { Env } from "./env";

export { Counter } from "./counter";

/** The most chunks one run may write. */
const MAX_STEPS = 1_000;
/** The longest wait before each chunk. */
const MAX_DELAY_MS = 10_000;

const ROUTES =
  'POST /count {"steps": 3, "delayMs"?: 0} starts a task writing a stream; GET /count/:runId shows it; GET /streams/:id follows it over SSE.\n';

export default {
  async fetch(request, env): Promise<Response> {
    const url = new URL(request.url);
    const counter = env.COUNTERS.getByName("default");
    // POST /count {"steps": 3} → 202 {"runId", "stream"}
    if (request.method === "POST" && url.pathname === "/count") {
      const body = (await request.json().catch(() => null)) as {
        steps?: unknown;
        delayMs?: unknown;
      } | null;
      const steps = body?.steps;
      const delayMs = body?.delayMs ?? 0;
      if (!Number.isInteger(steps) || (steps as number) < 0 || (steps as number) > MAX_STEPS) {
        return Response.json(
          {
            error: `"steps" must be an integer from 0 to ${MAX_STEPS}; got ${JSON.stringify(steps)}`,
          },
          { status: 400 },
        );
      }
      if (
        !Number.isInteger(delayMs) ||
        (delayMs as number) < 0 ||
        (delayMs as number) > MAX_DELAY_MS
      ) {
        return Response.json(
          {
            error: `"delayMs" must be an integer from 0 to ${MAX_DELAY_MS}; got ${JSON.stringify(delayMs)}`,
          },
          { status: 400 },
        );
      }
      return Response.json(await counter.start(steps as number, delayMs as number), {
        status: 202,
      });
    }
    // GET /count/:runId → 200 {"runId", "state", "steps"} or 404
    if (request.method === "GET" && url.pathname.startsWith("/count/")) {
      const runId = decodeURIComponent(url.pathname.slice("/count/".length));
      const status = await counter.status(runId);
      if (status === null) return Response.json({ error: "no such run" }, { status: 404 });
      return Response.json(status);
    }
    // GET /streams/:id → text/event-stream
    if (request.method === "GET" && url.pathname.startsWith("/streams/")) {
      return counter.fetch(request);
    }
    if (request.method === "GET" && url.pathname === "/") {
      return new Response(ROUTES);
    }
    return new Response(`Not found. ${ROUTES}`, { status: 404 });
  },
} satisfies ExportedHandler<Env>;
