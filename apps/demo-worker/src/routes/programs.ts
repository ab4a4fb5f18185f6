import { isWellFormedName } from "@durablekit/compose";
import type { Env } from "../env";
import { describeValue, errorResponse, json, readJsonBody, unexpectedFields } from "../http";
import { PROGRAMS_NAME, type ProgramCall } from "../programs";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";

const INTERRUPT_POLICIES = new Set(["fail", "restart", "replay"]);
/** The top-level fields of `POST /programs`. */
const PROGRAM_BODY_FIELDS = ["code", "onInterrupt", "access", "id"] as const;
const ACCESS = new Set(["read", "read-write"]);

/** The longest execution id (the executor's limit). */
const MAX_ID_LENGTH = 256;

function programs(env: Env) {
  return env.PROGRAMS.getByName(PROGRAMS_NAME);
}

function answer<T>(call: ProgramCall<T>): Response {
  return call.ok ? json(call.value) : errorResponse(call.status, call.code, call.message);
}

/**
 * The program routes: run a program against the demo host modules (`codemode:jobs`,
 * `codemode:approval`, `codemode:process`; a replay run unless the body picks another policy),
 * resume an interrupted one, read an execution, and see what the host modules really did.
 */
export const programRoutes: Route[] = [
  {
    method: "POST",
    path: "/programs",
    async handle(request, env) {
      const read = await readJsonBody(request);
      if ("error" in read) return read.error;
      const body = read.body;
      const usage =
        'POST /programs takes { "code": "<ES module source>", "onInterrupt"?: "fail" | "restart" | "replay", "access"?: "read" | "read-write", "id"?: "<execution id>" } (or the id as an Idempotency-Key header).';
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return errorResponse(400, "demo/bad-request", `${usage} Got ${describeValue(body)}.`);
      }
      const extra = unexpectedFields(body as Record<string, unknown>, PROGRAM_BODY_FIELDS);
      if (extra !== null) {
        return errorResponse(400, "demo/bad-request", `${usage} The body ${extra}.`);
      }
      const { code, onInterrupt, access, id: bodyId } = body as Record<string, unknown>;
      const headerId = request.headers.get("idempotency-key");
      if (headerId !== null && bodyId !== undefined && headerId !== bodyId) {
        return errorResponse(
          400,
          "demo/bad-request",
          'The Idempotency-Key header and "id" name different executions.',
        );
      }
      const id = bodyId ?? headerId ?? undefined;
      if (id !== undefined && !isWellFormedName(id, MAX_ID_LENGTH)) {
        return errorResponse(
          400,
          "demo/bad-request",
          `An execution id ("id" or Idempotency-Key) is 1–${MAX_ID_LENGTH} characters with no lone surrogate; got ${describeValue(id)}.`,
        );
      }
      if (typeof code !== "string" || code.length === 0) {
        return errorResponse(
          400,
          "demo/bad-request",
          `"code" must be a non-empty string; got ${describeValue(code)}. ${usage}`,
        );
      }
      if (onInterrupt !== undefined && !INTERRUPT_POLICIES.has(onInterrupt as string)) {
        return errorResponse(
          400,
          "demo/bad-request",
          `"onInterrupt" must be "fail", "restart" or "replay"; got ${describeValue(onInterrupt)}.`,
        );
      }
      if (access !== undefined && !ACCESS.has(access as string)) {
        return errorResponse(
          400,
          "demo/bad-request",
          `"access" must be "read" or "read-write"; got ${describeValue(access)}.`,
        );
      }
      const call = await programs(env).runProgram(code, {
        ...(onInterrupt === undefined
          ? {}
          : { onInterrupt: onInterrupt as "fail" | "restart" | "replay" }),
        ...(access === undefined ? {} : { access: access as "read" | "read-write" }),
        ...(id === undefined ? {} : { id }),
      });
      return answer(call as ProgramCall<unknown>);
    },
  },
  {
    method: "GET",
    path: "/programs/:id",
    async handle(_request, env, { id }) {
      const record = await programs(env).execution(id as string);
      if (!record) {
        return errorResponse(404, "demo/program-not-found", `No execution "${id}" exists.`);
      }
      return json(record);
    },
  },
  {
    method: "POST",
    path: "/programs/:id/resume",
    async handle(request, env, { id }) {
      const read = await readJsonBody(request);
      if ("error" in read) return read.error;
      const body = read.body;
      const usage =
        'POST /programs/:id/resume takes { "value": <any JSON> }: the answer of the interrupted call.';
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return errorResponse(400, "demo/bad-request", `${usage} Got ${describeValue(body)}.`);
      }
      const extra = unexpectedFields(body as Record<string, unknown>, ["value"]);
      if (extra !== null)
        return errorResponse(400, "demo/bad-request", `${usage} The body ${extra}.`);
      if (!("value" in body)) {
        return errorResponse(400, "demo/bad-request", `${usage} The body has no "value".`);
      }
      return answer(await programs(env).resumeProgram(id as string, body.value));
    },
  },
  {
    method: "GET",
    path: "/debug/jobs",
    debug: true,
    async handle(_request, env) {
      return json(await programs(env).hostCounts());
    },
  },
  {
    method: "GET",
    path: "/debug/jobs/:executionId",
    debug: true,
    async handle(_request, env, { executionId }) {
      return json(await programs(env).hostCounts(executionId as string));
    },
  },
  {
    method: "GET",
    path: "/debug/executions/:runId/jobs",
    debug: true,
    async handle(_request, env, { runId }) {
      const counts = await env.WORKSPACE.getByName(WORKSPACE_NAME).programHostCounts(
        runId as string,
      );
      if (counts === null) {
        return errorResponse(404, "tasks/not-found", `No run "${runId}" exists; check the run id.`);
      }
      return json(counts);
    },
  },
];
