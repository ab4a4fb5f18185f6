import { describeValue, errorResponse, readJsonBody, unexpectedFields } from "../http";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";
import { answer } from "./tasks";

const USAGE =
  'POST /schedules takes { "id": "<1–64 characters>", "cron": "<five-field cron, e.g. * * * * *>", "timezone"?: "<IANA zone>" }';

/**
 * The schedule routes: add a cron schedule of `demo.tick@v1` (each tick starts one run, from the
 * workspace object's alarm), list the schedules with their next and latest ticks, remove one.
 */
export const scheduleRoutes: Route[] = [
  {
    method: "GET",
    path: "/schedules",
    async handle(_request, env) {
      return answer(await env.WORKSPACE.getByName(WORKSPACE_NAME).listSchedules());
    },
  },
  {
    method: "POST",
    path: "/schedules",
    async handle(request, env) {
      const read = await readJsonBody(request);
      if ("error" in read) return read.error;
      const body = read.body;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return errorResponse(400, "demo/bad-request", `${USAGE}; got ${describeValue(body)}.`);
      }
      const extra = unexpectedFields(body as Record<string, unknown>, ["id", "cron", "timezone"]);
      if (extra !== null) return errorResponse(400, "demo/bad-request", `${USAGE}; ${extra}.`);
      const { id, cron, timezone } = body as Record<string, unknown>;
      if (typeof id !== "string" || id.length === 0 || id.length > 64) {
        return errorResponse(400, "demo/bad-request", `${USAGE}; "id" was ${describeValue(id)}.`);
      }
      if (typeof cron !== "string" || (timezone !== undefined && typeof timezone !== "string")) {
        return errorResponse(400, "demo/bad-request", `${USAGE}; got ${describeValue(body)}.`);
      }
      const call = await env.WORKSPACE.getByName(WORKSPACE_NAME).addSchedule({
        id,
        cron,
        ...(timezone === undefined ? {} : { timezone: timezone as string }),
      });
      return answer(call, 201);
    },
  },
  {
    method: "POST",
    path: "/schedules/:id/delete",
    async handle(_request, env, { id }) {
      return answer(await env.WORKSPACE.getByName(WORKSPACE_NAME).removeSchedule(id as string));
    },
  },
];
