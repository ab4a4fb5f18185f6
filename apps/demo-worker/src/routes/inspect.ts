import { HUB_NAME } from "../protocol-stream";
import type { Route, RouteHandler } from "../router";
import { WORKSPACE_NAME } from "../workspace";

/** The workspace's inspector: its streams. */
const workspace: RouteHandler = (request, env) =>
  env.WORKSPACE.getByName(WORKSPACE_NAME).inspect(request);

/**
 * A chat room's inspector, mounted below `/chat/<encodeURIComponent(chatId)>/inspect`. A request
 * that spelled the id otherwise (a browser leaves `:`, `@`, `,`, `=` and more unencoded in a path)
 * is redirected to that spelling, so the mount is always a path the inspector accepts and the
 * page's links stay under it.
 */
const chatRoom: RouteHandler = (request, env, { chatId }) => {
  const url = new URL(request.url);
  const segment = url.pathname.split("/")[2] ?? "";
  const canonical = encodeURIComponent(chatId as string);
  if (segment !== canonical) {
    const rest = url.pathname.split("/").slice(3).join("/");
    return Promise.resolve(
      Response.redirect(`${url.origin}/chat/${canonical}/${rest}${url.search}`, 308),
    );
  }
  const room = env.CHAT.getByName(chatId as string) as unknown as {
    inspect(request: Request, basePath: string): Promise<Response>;
  };
  return room.inspect(request, `/chat/${canonical}/inspect`);
};

/** The subscription hub's inspector: every Durable Streams subscription and its delivery state. */
const hub: RouteHandler = (request, env) =>
  env.SUBSCRIPTIONS.getByName(HUB_NAME).inspect(request, "/subscriptions/inspect");

/** `GET /debug/inspect/feeds`: what the workspace inspector's live feeds read, and how they ended. */
const feeds: RouteHandler = async (_request, env) =>
  Response.json(await env.WORKSPACE.getByName(WORKSPACE_NAME).inspectFeeds(), {
    headers: { "cache-control": "no-store" },
  });

/**
 * `GET /inspect/…`, `GET /chat/:chatId/inspect/…` and `GET /subscriptions/inspect/…`: the
 * inspector's page and JSON views of the workspace, of a chat room and of the subscription hub. Like `/debug/*`, they exist only with `DEMO_DEBUG=on`, and each
 * object's inspector checks the same setting again before it reads anything.
 */
export const inspectRoutes: Route[] = [
  { method: "GET", path: "/inspect", debug: true, handle: workspace },
  { method: "GET", path: "/inspect/*", debug: true, handle: workspace },
  { method: "GET", path: "/chat/:chatId/inspect", debug: true, handle: chatRoom },
  { method: "GET", path: "/chat/:chatId/inspect/*", debug: true, handle: chatRoom },
  { method: "GET", path: "/subscriptions/inspect", debug: true, handle: hub },
  { method: "GET", path: "/subscriptions/inspect/*", debug: true, handle: hub },
  { method: "GET", path: "/debug/inspect/feeds", debug: true, handle: feeds },
];
