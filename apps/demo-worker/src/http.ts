import { DEFAULT_MAX_DEPTH } from "@durablekit/handle-journal";
import { readBoundedBody } from "@durablekit/sse";

/** A JSON response with the given status. */
export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  const response = Response.json(body, { status, headers });
  return response;
}

/** The demo's error body: `{ error: { code, message } }` with a 4xx or 5xx status. */
export function errorResponse(status: number, code: string, message: string): Response {
  return json({ error: { code, message } }, status);
}

/** The largest request body a demo route reads. */
export const MAX_BODY_BYTES = 1_048_576;

/** The deepest JSON body a demo route accepts (handle-journal's default codec depth). */
export const MAX_BODY_DEPTH = DEFAULT_MAX_DEPTH;

/** How deep a parsed JSON value nests (a scalar is 0), walked without recursion. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const pending: Array<[unknown, number]> = [[value, 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop() as [unknown, number];
    if (typeof node !== "object" || node === null) continue;
    const inner = depth + 1;
    if (inner > deepest) deepest = inner;
    // Stop early: only "deeper than the limit" matters.
    if (deepest > MAX_BODY_DEPTH) return deepest;
    for (const child of Object.values(node)) pending.push([child, inner]);
  }
  return deepest;
}

/** True when a `Content-Type` names JSON (`application/json`, any parameters). */
function isJsonType(contentType: string | null): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "application/json";
}

/**
 * Reads a request's JSON body, or the coded 4xx response to answer instead:
 * - `demo/unsupported-media-type` (415): a body, or any `Content-Type`, that is not `application/json`
 *   (a cross-site HTML form can only send form or text types);
 * - `demo/body-too-large` (413): past {@link MAX_BODY_BYTES}, refused from `Content-Length` before
 *   reading, else counted as it streams and cut at the limit;
 * - `demo/bad-json` (400): text that is not UTF-8 JSON;
 * - `demo/too-deep` (400): nested deeper than {@link MAX_BODY_DEPTH}, checked here before it
 *   crosses to a Durable Object.
 * An empty body without a `Content-Type` reads as `undefined` when `allowEmpty`, else as bad JSON.
 */
export async function readJsonBody(
  request: Request,
  { allowEmpty = false }: { allowEmpty?: boolean } = {},
): Promise<{ body: unknown } | { error: Response }> {
  const contentType = request.headers.get("content-type");
  const declared = request.headers.get("content-length");
  const bodyless = request.body === null || declared === "0";
  if (!(allowEmpty && bodyless && contentType === null) && !isJsonType(contentType)) {
    await request.body?.cancel().catch(() => {});
    return {
      error: errorResponse(
        415,
        "demo/unsupported-media-type",
        "JSON routes take a body with Content-Type: application/json.",
      ),
    };
  }
  const read = await readBoundedBody(request, MAX_BODY_BYTES);
  if (!read.ok) {
    return {
      error: errorResponse(
        413,
        "demo/body-too-large",
        `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`,
      ),
    };
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(read.bytes);
  } catch {
    return { error: errorResponse(400, "demo/bad-json", "The request body is not UTF-8 text.") };
  }
  if (allowEmpty && text.trim() === "") return { body: undefined };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { error: errorResponse(400, "demo/bad-json", "The request body is not valid JSON.") };
  }
  if (depthOf(body) > MAX_BODY_DEPTH) {
    return {
      error: errorResponse(
        400,
        "demo/too-deep",
        `The request body nests deeper than ${MAX_BODY_DEPTH} levels.`,
      ),
    };
  }
  return { body };
}

/** How an error message names a value that was sent: short JSON, or its kind and size when long. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === "string" && value.length > 40) {
    return `a string of ${value.length} characters`;
  }
  const text = JSON.stringify(value);
  if (text.length <= 60) return text;
  return `an object with ${Object.keys(value as object)
    .slice(0, 5)
    .map((key) => JSON.stringify(key))
    .join(", ")}`;
}

/**
 * What is wrong with the top-level fields of a JSON body that takes `allowed`: `got "a", "b" at the
 * top level` for the fields it does not take, or null when it has none.
 */
export function unexpectedFields(
  body: Record<string, unknown>,
  allowed: readonly string[],
): string | null {
  const extra = Object.keys(body).filter((key) => !allowed.includes(key));
  if (extra.length === 0) return null;
  const names = extra
    .slice(0, 5)
    .map((key) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key))
    .join(", ");
  return `got ${names}${extra.length > 5 ? ` and ${extra.length - 5} more` : ""} at the top level`;
}
