import { isDurableKitError } from "@durablekit/compose";
import type { Inspector } from "../inspector";

/** An answer of a JSON route: its status and body, and whether it can still change. */
export interface ApiAnswer {
  status: number;
  body: unknown;
  /**
   * True when what the answer shows is final: a settled run (its children too), an ended
   * execution, a closed stream, an ended turn, a whole value. A live feed of it then ends.
   */
  final: boolean;
}

const SETTLED: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);

/** A view's answer, final or not. */
function ok(body: unknown, final = false): ApiAnswer {
  return { status: 200, body, final };
}

function numberParam(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null) return undefined;
  // Not a number stays a string, so the inspector refuses it naming the parameter.
  return /^\d+$/.test(raw) ? Number(raw) : (raw as unknown as number);
}

function listParams(params: URLSearchParams) {
  const states = params.getAll("state");
  return {
    state: (states.length === 0 ? undefined : states) as never,
    tag: params.get("tag") ?? undefined,
    limit: numberParam(params, "limit"),
    cursor: params.get("cursor") ?? undefined,
  };
}

function notFound(what: string): ApiAnswer {
  return {
    status: 404,
    body: { error: { code: "inspect/not-found", message: `${what} does not exist.` } },
    final: false,
  };
}

/** The routes of the JSON API, below `<basePath>/api`: each answers a view of the inspector. */
function route(inspector: Inspector, path: string, params: URLSearchParams): ApiAnswer {
  const parts = path.split("/").slice(1).map(decodeURIComponent);
  const [head, id, tail] = parts;
  if (parts.length === 1 && head === "overview") return ok(inspector.overview());
  if (head === "runs" && parts.length === 1) {
    const { state, limit, cursor } = listParams(params);
    const definition = params.get("definition") ?? undefined;
    const createdAfter = numberParam(params, "createdAfter");
    const createdBefore = numberParam(params, "createdBefore");
    return ok(inspector.runs({ state, definition, limit, cursor, createdAfter, createdBefore }));
  }
  if (head === "runs" && parts.length === 2 && id !== undefined) {
    const view = inspector.run(id);
    if (view === null) return notFound(`Run "${id}"`);
    const children = view.children.every((child) => SETTLED.has(child.state));
    return ok(view, SETTLED.has(view.run.state) && children);
  }
  if (head === "executions" && parts.length === 1) {
    const { state, limit, cursor } = listParams(params);
    return ok(inspector.executions({ state, limit, cursor }));
  }
  if (head === "executions" && parts.length === 2 && id !== undefined) {
    const view = inspector.execution(id);
    if (view === null) return notFound(`Execution "${id}"`);
    return ok(view, SETTLED.has(view.execution.state));
  }
  if (head === "streams" && parts.length === 1) {
    const { state, tag, limit, cursor } = listParams(params);
    return ok(inspector.streams({ state, tag, limit, cursor }));
  }
  if (head === "streams" && parts.length === 2 && id !== undefined) {
    const view = inspector.stream(id, {
      from: numberParam(params, "from"),
      limit: numberParam(params, "limit"),
    });
    if (view === null) return notFound(`Stream "${id}"`);
    return ok(view, view.stream.state !== "streaming");
  }
  if (head === "chats" && parts.length === 3 && id !== undefined && tail === "turns") {
    const { state, limit, cursor } = listParams(params);
    return ok(inspector.chatTurns(id, { state, limit, cursor }));
  }
  if (head === "turns" && parts.length === 2 && id !== undefined) {
    const view = inspector.chatTurn(id, {
      from: numberParam(params, "from"),
      limit: numberParam(params, "limit"),
    });
    if (view === null) return notFound(`Chat turn "${id}"`);
    return ok(view, view.turn.state !== "streaming");
  }
  // The whole of a value a view showed truncated: the path its record named.
  if (
    (head === "runs" || head === "executions" || head === "streams" || head === "turns") &&
    parts.length > 2
  ) {
    const view = inspector.value(path);
    return view === null ? notFound(`The value at ${path}`) : ok(view, true);
  }
  return notFound(`The route ${path}`);
}

/**
 * Answers a JSON route below `<basePath>/api` (`path` starts with `/`). A refusal of the
 * inspector (a bad parameter, a part it was not given) is answered with its code and message; any
 * other error is answered 500 without its details.
 */
export function answerApi(inspector: Inspector, path: string, params: URLSearchParams): ApiAnswer {
  try {
    return route(inspector, path, params);
  } catch (error) {
    if (isDurableKitError(error, "inspect/invalid-argument")) {
      return {
        status: 400,
        body: { error: { code: error.code, message: error.message } },
        final: false,
      };
    }
    if (isDurableKitError(error, "inspect/not-found")) {
      return {
        status: 404,
        body: { error: { code: error.code, message: error.message } },
        final: false,
      };
    }
    if (error instanceof URIError) {
      return {
        status: 400,
        body: {
          error: { code: "inspect/invalid-argument", message: "The path is not well-formed." },
        },
        final: false,
      };
    }
    console.warn("@durablekit/inspect: a view failed.", error);
    return {
      status: 500,
      body: { error: { message: "The view could not be read." } },
      final: false,
    };
  }
}
