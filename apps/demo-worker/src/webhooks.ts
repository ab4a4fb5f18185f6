import type { Env } from "./env";
import { FEED_WEBHOOK_URL } from "./feeds";
import { WORKSPACE_NAME } from "./workspace";

/**
 * How the demo's subscription hub sends a webhook: the feed's to the workspace object's receiver
 * ({@link FEED_WEBHOOK_URL}, over RPC); to a receiver on this machine (`localhost` or `127.x.x.x`,
 * as a test's or a developer's) through `fetch`; anything else is answered 502 without leaving the
 * Worker, so a demo never posts to the internet.
 */
export async function deliverWebhook(env: Env, request: Request): Promise<Response> {
  if (request.url === FEED_WEBHOOK_URL) {
    // Over RPC as plain parts: a Request's signal cannot cross it.
    const { status, body } = await env.WORKSPACE.getByName(WORKSPACE_NAME).receiveFeed({
      signature: request.headers.get("webhook-signature"),
      body: await request.text(),
    });
    return new Response(body, { status, headers: { "content-type": "application/json" } });
  }
  const host = new URL(request.url).hostname;
  if (host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return fetch(request);
  return new Response(`The demo delivers webhooks only to this machine, not to ${host}.`, {
    status: 502,
  });
}
