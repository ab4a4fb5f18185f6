import type { Route, RouteHandler } from "../router";
import { WORKSPACE_NAME } from "../workspace";

/** The workspace's inspector: its streams. */
const workspace: RouteHandler = (request, env) =>
  env.WORKSPACE.getByName(WORKSPACE_NAME).inspect(request);

/**
 * A chat room's inspector, mounted below the chat's own path as the request spelled it (its
 * percent-encoded segment), so the page's links stay under the same mount.
 */
const chatRoom: RouteHandler = (request, env, { chatId }) => {
  const segment = new URL(request.url).pathname.split("/")[2] ?? "";
  return env.CHAT.getByName(chatId as string).inspect(request, `/chat/${segment}/inspect`);
};

/**
 * `GET /inspect/…` and `GET /chat/:chatId/inspect/…`: the inspector's page and JSON views of the
 * workspace and of a chat room. Like `/debug/*`, they exist only with `DEMO_DEBUG=on`, and each
 * object's inspector checks the same setting again before it reads anything.
 */
export const inspectRoutes: Route[] = [
  { method: "GET", path: "/inspect", debug: true, handle: workspace },
  { method: "GET", path: "/inspect/*", debug: true, handle: workspace },
  { method: "GET", path: "/chat/:chatId/inspect", debug: true, handle: chatRoom },
  { method: "GET", path: "/chat/:chatId/inspect/*", debug: true, handle: chatRoom },
];
