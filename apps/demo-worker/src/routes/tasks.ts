import { type DemoDefinition, INPUT_SHAPES, MAX_REASON_LENGTH, type TaskCall } from "../demo-tasks";
import { describeValue, errorResponse, json, readJsonBody, unexpectedFields } from "../http";
import { RequestPolicy } from "../request-policy";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";

/** The top-level fields of a start request. */
const TASK_BODY_FIELDS = ["input", "idempotencyKey", "runId"] as const;

/** A task call's outcome as a response: its value as JSON (`status`), or its coded error. */
export function answer<T>(call: TaskCall<T>, status = 200): Response {
  return call.ok ? json(call.value, status) : errorResponse(call.status, call.code, call.message);
}

/**
 * The task routes: start a run of a definition, read a run, follow its events (Server-Sent Events,
 * resumable with `Last-Event-ID`), cancel it, deliver an event. Every run
 * lives in the workspace object, whose alarm drives them (see README).
 */
export const taskRoutes: Route[] = [
  {
    method: "POST",
    path: "/tasks/:definition",
    async handle(request, env, { definition }) {
      const read = await readJsonBody(request, { allowEmpty: true });
      if ("error" in read) return read.error;
      const body = read.body ?? {};
      const shape = INPUT_SHAPES[definition as DemoDefinition] ?? "{ … }";
      const usage = `POST /tasks/${definition} takes { "input": ${shape}, "idempotencyKey"?: "<key>", "runId"?: "<run id>" }`;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return errorResponse(400, "demo/bad-request", `${usage}; got ${describeValue(body)}.`);
      }
      const extra = unexpectedFields(body as Record<string, unknown>, TASK_BODY_FIELDS);
      if (extra !== null) {
        // The usual slip: the definition's input sent bare, without its "input" wrapper.
        return errorResponse(
          400,
          "demo/bad-request",
          `The body needs the definition's input inside { "input": { … } }: ${usage}; ${extra}.`,
        );
      }
      const { input, idempotencyKey, runId } = body as Record<string, unknown>;
      for (const [field, value] of Object.entries({ idempotencyKey, runId })) {
        if (value !== undefined && typeof value !== "string") {
          return errorResponse(
            400,
            "demo/bad-request",
            `"${field}" must be a string; got ${describeValue(value)}.`,
          );
        }
      }
      const call = await env.WORKSPACE.getByName(WORKSPACE_NAME).startTask(definition as string, {
        input,
        idempotencyKey: idempotencyKey as string | undefined,
        runId: runId as string | undefined,
      });
      return answer(call, call.ok && call.value.accepted ? 202 : 200);
    },
  },
  {
    method: "GET",
    path: "/tasks/:runId",
    async handle(_request, env, { runId }) {
      return answer(await env.WORKSPACE.getByName(WORKSPACE_NAME).getTask(runId as string));
    },
  },
  {
    method: "GET",
    path: "/tasks/:runId/events",
    handle: (request, env, { runId }) =>
      env.WORKSPACE.getByName(WORKSPACE_NAME).taskEventsSse(
        runId as string,
        request,
        new RequestPolicy(env).origins,
      ),
  },
  {
    method: "POST",
    path: "/tasks/:runId/cancel",
    async handle(request, env, { runId }) {
      const read = await readJsonBody(request, { allowEmpty: true });
      if ("error" in read) return read.error;
      const body = read.body ?? {};
      const usage = `POST /tasks/:runId/cancel takes nothing or { "reason"?: "<at most ${MAX_REASON_LENGTH} characters>" }`;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return errorResponse(400, "demo/bad-request", `${usage}; got ${describeValue(body)}.`);
      }
      const extra = unexpectedFields(body as Record<string, unknown>, ["reason"]);
      if (extra !== null) return errorResponse(400, "demo/bad-request", `${usage}; ${extra}.`);
      const reason = (body as { reason?: unknown }).reason;
      if (
        reason !== undefined &&
        (typeof reason !== "string" || reason.length > MAX_REASON_LENGTH)
      ) {
        return errorResponse(
          400,
          "demo/bad-request",
          `"reason" must be a string of at most ${MAX_REASON_LENGTH} characters; got ${describeValue(reason)}.`,
        );
      }
      return answer(
        await env.WORKSPACE.getByName(WORKSPACE_NAME).cancelTask(runId as string, reason),
      );
    },
  },
  {
    method: "POST",
    path: "/tasks/:runId/events/:type",
    async handle(request, env, { runId, type }) {
      const read = await readJsonBody(request, { allowEmpty: true });
      if ("error" in read) return read.error;
      return answer(
        await env.WORKSPACE.getByName(WORKSPACE_NAME).sendTaskEvent(
          runId as string,
          type as string,
          read.body ?? null,
        ),
      );
    },
  },
];
