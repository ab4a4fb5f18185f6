import { H } from "./headers";

const EXPOSED = [
  H.nextOffset,
  H.cursor,
  H.upToDate,
  H.closed,
  H.ttl,
  H.expiresAt,
  H.producerEpoch,
  H.producerSeq,
  H.expectedSeq,
  H.receivedSeq,
  H.sseEncoding,
  "ETag",
  "Location",
  "Content-Type",
].join(", ");

const ALLOWED = [
  "Content-Type",
  "If-None-Match",
  "Last-Event-ID",
  H.seq,
  H.closed,
  H.ttl,
  H.expiresAt,
  H.forkedFrom,
  H.forkOffset,
  H.forkSubOffset,
  H.producerId,
  H.producerEpoch,
  H.producerSeq,
].join(", ");

/**
 * Headers every protocol response carries: browser hardening (protocol §12.7) and CORS, so a page
 * on another origin can read streams with `fetch` (access control is the host's job).
 */
export function baseHeaders(extra?: Record<string, string>): Headers {
  const headers = new Headers({
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Resource-Policy": "cross-origin",
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": EXPOSED,
  });
  if (extra !== undefined)
    for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  return headers;
}

/** The answer to a CORS preflight. */
export function preflight(): Response {
  const headers = baseHeaders({
    "Access-Control-Allow-Methods": "GET, HEAD, PUT, POST, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": ALLOWED,
    "Access-Control-Max-Age": "86400",
  });
  return new Response(null, { status: 204, headers });
}

/** An error answer: a status, a short text body (none for HEAD), and any protocol headers. */
export function problem(
  status: number,
  message: string,
  extra?: Record<string, string>,
  head = false,
): Response {
  const headers = baseHeaders({ "Content-Type": "text/plain; charset=utf-8", ...extra });
  return new Response(head ? null : message, { status, headers });
}
