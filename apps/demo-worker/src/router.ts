import type { Env } from "./env";
import { errorResponse } from "./http";

/** A route's handler: the request, the Worker's bindings and the named groups of its pattern. */
export type RouteHandler = (
  request: Request,
  env: Env,
  params: Record<string, string>,
) => Promise<Response> | Response;

/** One route: a method and a path pattern with `:name` segments (a trailing `*` matches the rest). */
export interface Route {
  method: string;
  path: string;
  handle: RouteHandler;
}

interface CompiledRoute extends Route {
  regex: RegExp;
}

function compile(route: Route): CompiledRoute {
  const source = route.path
    .split("/")
    .map((segment) => {
      if (segment === "*") return "(?<rest>.*)";
      if (segment.startsWith(":")) return `(?<${segment.slice(1)}>[^/]+)`;
      return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return { ...route, regex: new RegExp(`^${source}$`) };
}

/**
 * Dispatches a request to the first route whose method and path match. A path that matches with
 * another method answers 405; no match answers 404. Both carry a coded JSON error body.
 */
export function createRouter(routes: Route[]): (request: Request, env: Env) => Promise<Response> {
  const compiled = routes.map(compile);
  return async (request, env) => {
    const url = new URL(request.url);
    let pathMatched = false;
    for (const route of compiled) {
      const match = route.regex.exec(url.pathname);
      if (!match) continue;
      pathMatched = true;
      if (route.method !== request.method && !(route.method === "GET" && request.method === "HEAD"))
        continue;
      const params: Record<string, string> = {};
      for (const [key, value] of Object.entries(match.groups ?? {})) {
        params[key] = decodeURIComponent(value);
      }
      return route.handle(request, env, params);
    }
    if (pathMatched) {
      return errorResponse(
        405,
        "demo/method-not-allowed",
        `${request.method} is not allowed on ${url.pathname}.`,
      );
    }
    return errorResponse(404, "demo/not-found", `No route for ${request.method} ${url.pathname}.`);
  };
}
