import type { Env } from "./env";

/**
 * How the demo's subscription hub sends a webhook: to a receiver on this machine (`localhost` or
 * `127.x.x.x`, as a test's or a developer's) through `fetch`; anything else is answered 502 without
 * leaving the Worker, so a demo never posts to the internet. (A production hub passes `fetch`
 * itself, or routes to its own receivers.)
 */
export async function deliverWebhook(_env: Env, request: Request): Promise<Response> {
  const host = new URL(request.url).hostname;
  if (host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return fetch(request);
  return new Response(`The demo delivers webhooks only to this machine, not to ${host}.`, {
    status: 502,
  });
}
