import { describeValue, errorResponse, json, readJsonBody, unexpectedFields } from "../http";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";
import { answer } from "./tasks";

const USAGE =
  'POST /fanout takes { "children": 1–1000, "objects"?: 1–100, "ms"?: 0–10000, "spacingMs"?: 0–1000, "idempotencyKey"?: "<key>" }';

/**
 * A job fanned out over many objects: `POST /fanout` starts a `demo.fanout@v1` run in the
 * workspace, which starts one child run per child in the shard objects (`shard-<i mod objects>`)
 * and awaits them all; `GET /fanout/:runId` shows the fan-in so far. `GET /debug/shards/:name`
 * (with `DEMO_DEBUG=on`) shows what ran in one shard object and what it still owes.
 */
export const fanoutRoutes: Route[] = [
  {
    method: "POST",
    path: "/fanout",
    async handle(request, env) {
      const read = await readJsonBody(request);
      if ("error" in read) return read.error;
      const body = read.body;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return errorResponse(400, "demo/bad-request", `${USAGE}; got ${describeValue(body)}.`);
      }
      const fields = body as Record<string, unknown>;
      const extra = unexpectedFields(fields, [
        "children",
        "objects",
        "ms",
        "spacingMs",
        "idempotencyKey",
      ]);
      if (extra !== null) return errorResponse(400, "demo/bad-request", `${USAGE}; ${extra}.`);
      const { idempotencyKey, ...input } = fields;
      if (idempotencyKey !== undefined && typeof idempotencyKey !== "string") {
        return errorResponse(
          400,
          "demo/bad-request",
          `"idempotencyKey" must be a string; got ${describeValue(idempotencyKey)}.`,
        );
      }
      const call = await env.WORKSPACE.getByName(WORKSPACE_NAME).startTask("demo.fanout@v1", {
        input,
        ...(idempotencyKey === undefined ? {} : { idempotencyKey: idempotencyKey as string }),
      });
      return answer(call, call.ok && call.value.accepted ? 202 : 200);
    },
  },
  {
    method: "GET",
    path: "/fanout/:runId",
    async handle(_request, env, { runId }) {
      return answer(await env.WORKSPACE.getByName(WORKSPACE_NAME).fanout(runId as string));
    },
  },
  {
    method: "GET",
    path: "/debug/shards/:name",
    debug: true,
    async handle(_request, env, { name }) {
      if (!/^shard-(?:[0-9]|[1-9][0-9])$/.test(name as string)) {
        return errorResponse(
          404,
          "demo/not-found",
          `No shard object "${name}": shards are shard-0 … shard-99.`,
        );
      }
      return json(await env.SHARD.getByName(name as string).debugState());
    },
  },
];
