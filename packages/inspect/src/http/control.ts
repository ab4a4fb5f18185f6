import { isDurableKitError } from "@durablekit/compose";
import type { Tasks } from "@durablekit/tasks";
import { check } from "../arguments";
import { InspectError } from "../errors";

/** What the inspector's controls change on task runs: a `Tasks` of `@durablekit/tasks` has it. */
export type InspectTasksControl = Readonly<Pick<Tasks, "pause" | "resume" | "restart">>;

/**
 * The inspector's controls: buttons on a run's page that pause, resume and restart it. Off unless
 * given. They write, so they have an `authorize` of their own, asked after the inspector's: a
 * request that may read the inspector changes nothing unless this answers `true` too.
 */
export interface InspectControlOptions {
  /** The object's `Tasks` (or anything with its `pause`, `resume` and `restart`). */
  tasks: InspectTasksControl;
  /**
   * Decides whether a request may change a run: `true` (or a promise of it) lets it through; anything
   * else, or a throw, answers 403 and changes nothing. It sees the request of the page's button (a
   * `POST` with the page's query string, and your origin's cookies).
   */
  authorize: (request: Request) => boolean | Promise<boolean>;
}

/** The largest body a control request may carry (a restart's `{ "from": <step name> }`). */
const MAX_BODY_BYTES = 4096;

const ACTIONS = new Set(["pause", "resume", "restart"]);

/** Checks the `control` option at the door; answers it, or undefined when it was not given. */
export function checkControl(value: unknown): InspectControlOptions | undefined {
  if (value === undefined) return undefined;
  const control = check.options(value as object, "control") as Partial<InspectControlOptions>;
  const tasks = control.tasks as Partial<InspectTasksControl> | undefined;
  if (
    typeof tasks !== "object" ||
    tasks === null ||
    typeof tasks.pause !== "function" ||
    typeof tasks.resume !== "function" ||
    typeof tasks.restart !== "function"
  ) {
    throw new InspectError(
      "inspect/invalid-argument",
      "control.tasks must be the object's Tasks (it needs pause, resume and restart).",
    );
  }
  if (typeof control.authorize !== "function") {
    throw new InspectError(
      "inspect/invalid-argument",
      "control.authorize must be a function deciding who may change runs; the controls write.",
    );
  }
  return control as InspectControlOptions;
}

function answer(status: number, body: unknown): Response {
  return Response.json(body, { status, headers: { "cache-control": "no-store" } });
}

function refusal(status: number, code: string, message: string): Response {
  return answer(status, { error: { code, message } });
}

/**
 * Answers a control request, `POST <basePath>/api/runs/<run id>/<pause | resume | restart>` (`path`
 * is below `<basePath>/api`). In order: the route; a JSON content type (so a browser sends no such
 * request across origins without asking first); the `Origin` header, when sent, is the request's own;
 * `control.authorize`; then the run is changed once. A restart's body is `{ "from": <step name> }`.
 */
export async function controlResponse(
  request: Request,
  path: string,
  control: InspectControlOptions,
): Promise<Response> {
  const parts = path.split("/").slice(1);
  const [head, encodedId, action] = parts;
  if (
    parts.length !== 3 ||
    head !== "runs" ||
    encodedId === undefined ||
    !ACTIONS.has(action ?? "")
  ) {
    return refusal(
      404,
      "inspect/not-found",
      "Not a control route: POST /api/runs/<run id>/pause, resume or restart.",
    );
  }
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json(\s*;|$)/i.test(type)) {
    return refusal(
      415,
      "inspect/invalid-argument",
      "A control request carries content-type: application/json.",
    );
  }
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== new URL(request.url).origin) {
    return refusal(403, "inspect/forbidden", "A control request from another origin is refused.");
  }
  let allowed: unknown;
  try {
    allowed = await control.authorize(request);
  } catch (error) {
    console.warn("@durablekit/inspect: control.authorize threw; the request was refused.", error);
    allowed = false;
  }
  if (allowed !== true) {
    return refusal(403, "inspect/forbidden", "Not authorized to change runs of this object.");
  }
  let runId: string;
  try {
    runId = decodeURIComponent(encodedId);
  } catch {
    return refusal(400, "inspect/invalid-argument", "The run id in the path is not well-formed.");
  }
  const body = await readBody(request);
  if (body instanceof Response) return body;
  try {
    if (action === "pause") return answer(200, { runId, paused: await control.tasks.pause(runId) });
    if (action === "resume")
      return answer(200, { runId, resumed: await control.tasks.resume(runId) });
    const from = (body as { from?: unknown } | null)?.from;
    if (typeof from !== "string") {
      return refusal(
        400,
        "inspect/invalid-argument",
        'A restart\'s body is { "from": <step name> }.',
      );
    }
    return answer(200, { runId, ...(await control.tasks.restart(runId, { from })) });
  } catch (error) {
    return refusedByTasks(error);
  }
}

/** The request's JSON body (null when empty), or the refusal of one too large or not JSON. */
async function readBody(request: Request): Promise<unknown> {
  const tooLarge = () =>
    refusal(
      413,
      "inspect/too-large",
      `A control request's body is at most ${MAX_BODY_BYTES} bytes.`,
    );
  if (Number(request.headers.get("content-length") ?? "0") > MAX_BODY_BYTES) return tooLarge();
  // Read at most MAX_BODY_BYTES, whatever the request declared (a chunked body declares nothing).
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = request.body?.getReader();
  while (reader !== undefined) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > MAX_BODY_BYTES) {
      await reader.cancel();
      return tooLarge();
    }
    chunks.push(value);
  }
  const joined = new Uint8Array(bytes);
  let at = 0;
  for (const chunk of chunks) {
    joined.set(chunk, at);
    at += chunk.byteLength;
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(joined);
  } catch {
    return refusal(400, "inspect/invalid-argument", "The body is not UTF-8 text.");
  }
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return refusal(400, "inspect/invalid-argument", "The body is not JSON.");
  }
}

const STATUS_OF: Readonly<Record<string, number>> = {
  "invalid-argument": 400,
  "not-found": 404,
  conflict: 409,
};

/** A refusal of the tasks engine, answered with its code; anything else, 500 without details. */
function refusedByTasks(error: unknown): Response {
  if (isDurableKitError(error)) {
    const status = STATUS_OF[error.code.slice(error.code.indexOf("/") + 1)];
    if (status !== undefined) return refusal(status, error.code, error.message);
  }
  console.warn("@durablekit/inspect: a control request failed.", error);
  return answer(500, { error: { message: "The run could not be changed." } });
}
