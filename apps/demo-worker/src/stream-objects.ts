import type { Env } from "./env";
import { RUN_EVENTS_PREFIX } from "./protocol-stream";
import { WORKSPACE_NAME } from "./workspace";

/**
 * The object that holds a protocol stream path: a run's events (`runs/<id>`) live in the workspace,
 * every other stream in its own `ProtocolStream`.
 */
export function protocolObject(
  env: Env,
  path: string,
): { fetch(request: Request): Promise<Response> } {
  if (path.startsWith(`${RUN_EVENTS_PREFIX}/`)) {
    return {
      fetch: (request) => env.WORKSPACE.getByName(WORKSPACE_NAME).runEventsProtocol(request),
    };
  }
  return env.PROTOCOL_STREAMS.getByName(path);
}
