import type { TaskCall } from "../demo-tasks";
import { FEED_PATTERN, FEED_SUBSCRIPTION, FEED_WEBHOOK_URL } from "../feeds";
import { errorResponse, json } from "../http";
import { HUB_NAME, PROTOCOL_BASE_PATH } from "../protocol-stream";
import type { Route } from "../router";
import { WORKSPACE_NAME } from "../workspace";
import { answer } from "./tasks";

/** The feed subscription's control URL at the hub, on the request's own origin. */
const subscriptionUrl = (request: Request) =>
  new URL(`${PROTOCOL_BASE_PATH}/__ds/subscriptions/${FEED_SUBSCRIPTION}`, request.url);

/**
 * The feed routes: `POST /feeds` subscribes `demo.feed@v1` to every `feed/*` stream (a webhook
 * subscription at the hub, to the workspace's receiver; 200 whether or not it existed), after which each batch
 * appended to `/v1/stream/feed/<name>` starts one run; `GET /feeds` shows the subscription and
 * the runs it started (`?cursor=` pages them).
 */
export const feedRoutes: Route[] = [
  {
    method: "POST",
    path: "/feeds",
    async handle(request, env) {
      const put = await env.SUBSCRIPTIONS.getByName(HUB_NAME).fetch(
        new Request(subscriptionUrl(request), {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            type: "webhook",
            pattern: FEED_PATTERN,
            webhook: { url: FEED_WEBHOOK_URL },
            description: "demo.feed@v1: one run per batch appended to a feed/* stream",
          }),
        }),
      );
      // 200 whether this call created it or it was there: the route makes sure it exists.
      if (put.status !== 200 && put.status !== 201) return json(await put.json(), put.status);
      return json(await put.json(), 200);
    },
  },
  {
    method: "GET",
    path: "/feeds",
    async handle(request, env) {
      const cursor = new URL(request.url).searchParams.get("cursor") ?? undefined;
      const view = await env.SUBSCRIPTIONS.getByName(HUB_NAME).fetch(
        new Request(subscriptionUrl(request)),
      );
      const runs = (await env.WORKSPACE.getByName(WORKSPACE_NAME).feedRuns(cursor)) as TaskCall<{
        items: unknown[];
        next: string | null;
      }>;
      if (!runs.ok) return answer(runs);
      if (view.status !== 200 && view.status !== 404) {
        return errorResponse(502, "demo/hub-unavailable", `The hub answered ${view.status}.`);
      }
      return json({
        subscription: view.status === 200 ? await view.json() : null,
        runs: runs.value,
      });
    },
  },
];
