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

/**
 * Reads a request's JSON body, or the coded 4xx response to answer instead: `demo/body-too-large`
 * (413) past {@link MAX_BODY_BYTES}, `demo/bad-json` (400) for text that is not JSON. An empty body
 * reads as `undefined` when `allowEmpty`, else as bad JSON.
 */
export async function readJsonBody(
  request: Request,
  { allowEmpty = false }: { allowEmpty?: boolean } = {},
): Promise<{ body: unknown } | { error: Response }> {
  const text = await request.text();
  if (new TextEncoder().encode(text).byteLength > MAX_BODY_BYTES) {
    return {
      error: errorResponse(
        413,
        "demo/body-too-large",
        `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`,
      ),
    };
  }
  if (allowEmpty && text.trim() === "") return { body: undefined };
  try {
    return { body: JSON.parse(text) };
  } catch {
    return { error: errorResponse(400, "demo/bad-json", "The request body is not valid JSON.") };
  }
}
