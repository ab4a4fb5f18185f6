import type { Env } from "./env";
import { errorResponse } from "./http";
import { RequestPolicy } from "./request-policy";

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
  /** An inspection route: it exists only when the dev config sets `DEMO_DEBUG=on`. */
  debug?: boolean;
  /** A Durable Streams protocol route: its CORS rules stand, so no Origin check. */
  protocol?: boolean;
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

/** The decoded path parameters of a match, or null when one is not valid percent-encoded UTF-8. */
function decodeParams(match: RegExpExecArray): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (const [key, value] of Object.entries(match.groups ?? {})) {
    try {
      params[key] = decodeURIComponent(value);
    } catch {
      return null;
    }
  }
  return params;
}

/**
 * Dispatches a request to the first route whose method and path match, after the
 * {@link RequestPolicy} (Host, Origin, debug routes). A path that matches with another method answers
 * 405; no match answers 404 (for an inspection route while `DEMO_DEBUG` is off, with how to turn it
 * on); a path parameter that is not valid percent-encoding answers 400
 * `demo/bad-path`. Each carries a coded JSON error body.
 */
export function createRouter(routes: Route[]): (request: Request, env: Env) => Promise<Response> {
  const compiled = routes.map(compile);
  return async (request, env) => {
    const url = new URL(request.url);
    const policy = new RequestPolicy(env);
    let pathMatched = false;
    let debugOff = false;
    for (const route of compiled) {
      if (route.debug && !policy.debug) {
        debugOff ||= route.regex.test(url.pathname);
        continue;
      }
      const match = route.regex.exec(url.pathname);
      if (!match) continue;
      pathMatched = true;
      if (route.method !== request.method && !(route.method === "GET" && request.method === "HEAD"))
        continue;
      const refused = policy.refusal(request, { checkOrigin: !route.protocol });
      if (refused) return refused;
      const params = decodeParams(match);
      if (params === null) {
        return errorResponse(
          400,
          "demo/bad-path",
          `The path ${url.pathname} is not valid percent-encoded UTF-8.`,
        );
      }
      return route.handle(request, env, params);
    }
    const refused = policy.refusal(request, { checkOrigin: false });
    if (refused) return refused;
    if (pathMatched) {
      return errorResponse(
        405,
        "demo/method-not-allowed",
        `${request.method} is not allowed on ${url.pathname}.`,
      );
    }
    if (debugOff) {
      return errorResponse(
        404,
        "demo/not-found",
        `${url.pathname} is an inspection route, on only when the demo runs with DEMO_DEBUG=on: start it with \`wrangler dev --var DEMO_DEBUG:on\` (docs/getting-started.md shows the command), or put DEMO_DEBUG=on in apps/demo-worker/.dev.vars.`,
      );
    }
    return errorResponse(404, "demo/not-found", `No route for ${request.method} ${url.pathname}.`);
  };
}
