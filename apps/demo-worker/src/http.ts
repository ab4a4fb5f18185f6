/** A JSON response with the given status. */
export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  const response = Response.json(body, { status, headers });
  return response;
}

/** The demo's error body: `{ error: { code, message } }` with a 4xx or 5xx status. */
export function errorResponse(status: number, code: string, message: string): Response {
  return json({ error: { code, message } }, status);
}
