import { PAGE_CSP, PAGE_CSS, PAGE_HTML, PAGE_JS } from "../page";
import { RequestPolicy } from "../request-policy";
import type { Route } from "../router";

/** A static file of the page, under the page's CSP. */
function file(body: string, contentType: string): Response {
  return new Response(body, {
    headers: {
      "content-type": contentType,
      "content-security-policy": PAGE_CSP,
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
    },
  });
}

/** `GET /`: the page for a person (see `page.ts`), its script, its style and an empty favicon. */
export const pageRoutes: Route[] = [
  {
    method: "GET",
    path: "/",
    // The page links to the inspector only when its routes are on (DEMO_DEBUG=on), and never asks.
    handle: (_request, env) =>
      file(
        new RequestPolicy(env).debug
          ? PAGE_HTML.replace("<body>", '<body data-inspector="on">')
          : PAGE_HTML,
        "text/html; charset=utf-8",
      ),
  },
  {
    method: "GET",
    path: "/page.js",
    handle: () => file(PAGE_JS, "text/javascript; charset=utf-8"),
  },
  { method: "GET", path: "/page.css", handle: () => file(PAGE_CSS, "text/css; charset=utf-8") },
  // Browsers ask for it on every page: nothing, rather than a 404 in the console.
  { method: "GET", path: "/favicon.ico", handle: () => new Response(null, { status: 204 }) },
];
