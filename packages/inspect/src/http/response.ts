import { createEmitter } from "@durablekit/compose";
import { check } from "../arguments";
import { InspectError } from "../errors";
import type { InspectEvent } from "../events";
import type { Inspector } from "../inspector";
import { answerApi } from "./api";
import { checkControl, controlResponse, type InspectControlOptions } from "./control";
import { liveResponse } from "./live";
import { INSPECT_PAGE_CSP, pageFiles } from "./page";

/** Options of {@link inspectorResponse}. */
export interface InspectResponseOptions {
  /**
   * Decides whether a request may see the inspector: `true` (or a promise of it) lets it through.
   * Required: without it every route answers 401; when it answers anything but `true`, or throws,
   * the route answers 403. Nothing of the object is read before it answered `true`.
   *
   * It sees every request the page makes, and a browser sets no header of yours on them: check
   * what a browser carries. The page carries the query string of its own URL on each of its
   * requests (its script, style, `fetch` and `EventSource` calls), so opening
   * `<basePath>/?token=…` works with an `authorize` that reads `token` from the request's URL;
   * a cookie of your own origin is sent with each of them too.
   */
  authorize: (request: Request) => boolean | Promise<boolean>;
  /** Where the inspector is mounted, e.g. `/inspect`. Default `/inspect`. */
  basePath?: string;
  /** How often a live view is read again, in milliseconds. Default 1,000. */
  liveIntervalMs?: number;
  /** How long one live connection lasts before the page reconnects, in milliseconds. Default 60,000. */
  maxLiveMs?: number;
  /** Receives {@link InspectEvent}s: each read of a live view, and why a live view stopped. */
  onEvent?: (event: InspectEvent) => void;
  /**
   * The controls that change task runs (pause, resume, restart) from a run's page, behind an
   * `authorize` of their own. Without it the inspector only reads, and answers 405 to anything
   * but `GET` and `HEAD`.
   */
  control?: InspectControlOptions;
}

/**
 * A mount path: segments as `encodeURIComponent` writes them, so it holds no quote, `<`, `&` or
 * space and is safe in the page's HTML; no trailing `/`.
 */
function checkBasePath(value: unknown): string {
  if (value === undefined) return "/inspect";
  if (typeof value !== "string" || !/^(\/[A-Za-z0-9._~!*'()%-]+)*\/?$/.test(value)) {
    throw new InspectError(
      "inspect/invalid-argument",
      `basePath must be a path such as "/inspect", its segments percent-encoded (encodeURIComponent); got ${JSON.stringify(value)}.`,
    );
  }
  return value.replace(/\/+$/, "");
}

/** Headers of every answer: no caching, no sniffing, the page's CSP, no referrer. */
function headers(contentType: string): Headers {
  return new Headers({
    "content-type": contentType,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "content-security-policy": INSPECT_PAGE_CSP,
    "referrer-policy": "no-referrer",
  });
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: headers("application/json; charset=utf-8"),
  });
}

function refused(status: 401 | 403, message: string): Response {
  return json(status, { error: { message } });
}

async function authorized(
  request: Request,
  authorize: InspectResponseOptions["authorize"] | undefined,
): Promise<Response | null> {
  if (typeof authorize !== "function") {
    return refused(401, "The inspector has no authorize function; nothing is shown without one.");
  }
  let verdict: unknown;
  try {
    verdict = await authorize(request);
  } catch (error) {
    console.warn("@durablekit/inspect: authorize threw; the request was refused.", error);
    verdict = false;
  }
  return verdict === true ? null : refused(403, "Not authorized to inspect this object.");
}

/**
 * Serves the inspector under `basePath`: the page (`GET <basePath>/`, with its script and style,
 * no external asset, a strict CSP), the JSON views (`GET <basePath>/api/…`, see the README) and
 * their live updates over Server-Sent Events (`GET <basePath>/api/live?view=<api path>`). Every
 * route is behind `authorize`; a path outside `basePath` answers 404.
 *
 * ```ts
 * if (url.pathname.startsWith("/inspect")) {
 *   return inspectorResponse(request, this.inspector, { authorize: (r) => isAdmin(r) });
 * }
 * ```
 */
export async function inspectorResponse(
  request: Request,
  inspector: Inspector,
  options: InspectResponseOptions,
): Promise<Response> {
  const denied = await authorized(request, options?.authorize);
  if (denied !== null) return denied;
  const basePath = checkBasePath(options.basePath);
  const liveIntervalMs = check.ms(options.liveIntervalMs, "liveIntervalMs", 1000, { min: 10 });
  const maxLiveMs = check.ms(options.maxLiveMs, "maxLiveMs", 60_000, { min: 10 });
  check.callback(options.onEvent, "onEvent");
  const control = checkControl(options.control);
  const url = new URL(request.url);
  if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) {
    return json(404, { error: { code: "inspect/not-found", message: "Not an inspector route." } });
  }
  if (request.method === "POST" && control !== undefined) {
    const path = url.pathname.slice(basePath.length);
    const answer = path.startsWith("/api/")
      ? await controlResponse(request, path.slice("/api".length), control)
      : json(404, { error: { code: "inspect/not-found", message: "Not an inspector route." } });
    for (const [name, value] of headers("application/json; charset=utf-8")) {
      answer.headers.set(name, value);
    }
    return answer;
  }
  if (request.method !== "GET" && request.method !== "HEAD") {
    const message =
      control === undefined
        ? "The inspector only reads: use GET."
        : "Use GET to read, and POST for the run controls.";
    const answer = json(405, { error: { message } });
    answer.headers.set("allow", control === undefined ? "GET, HEAD" : "GET, HEAD, POST");
    return answer;
  }
  const answer = route(request, inspector, url, basePath, control !== undefined, {
    liveIntervalMs,
    maxLiveMs,
    emit: createEmitter("@durablekit/inspect", options.onEvent),
  });
  // HEAD: the same status and headers, no body; a live route answers without reading anything.
  if (request.method === "HEAD") {
    await answer.body?.cancel();
    return new Response(null, { status: answer.status, headers: answer.headers });
  }
  return answer;
}

function route(
  request: Request,
  inspector: Inspector,
  url: URL,
  basePath: string,
  controls: boolean,
  live: { liveIntervalMs: number; maxLiveMs: number; emit: (event: InspectEvent) => void },
): Response {
  const path = url.pathname.slice(basePath.length) || "/";
  const file = pageFiles(basePath, url.searchParams, controls).get(path);
  if (file !== undefined) {
    return new Response(file.body, { headers: headers(file.contentType) });
  }
  if (path === "/api/live") {
    const view = url.searchParams.get("view") ?? "";
    if (!view.startsWith("/") || view.startsWith("/live")) {
      return json(400, {
        error: {
          code: "inspect/invalid-argument",
          message: 'view must be an API path such as "/overview".',
        },
      });
    }
    const eventStream = headers("text/event-stream; charset=utf-8");
    if (request.method === "HEAD") return new Response(null, { headers: eventStream });
    const [viewPath = "", query = ""] = view.split("?", 2);
    const read = () => answerApi(inspector, viewPath, new URLSearchParams(query));
    return liveResponse(read, {
      view,
      changes: inspector.changes(viewPath),
      intervalMs: live.liveIntervalMs,
      maxMs: live.maxLiveMs,
      signal: request.signal,
      headers: eventStream,
      emit: live.emit,
    });
  }
  if (path.startsWith("/api/")) {
    const answer = answerApi(inspector, path.slice("/api".length), url.searchParams);
    return json(answer.status, answer.body);
  }
  return json(404, { error: { code: "inspect/not-found", message: "Not an inspector route." } });
}
