import type { Programs } from "./programs";
import type { ProtocolStream } from "./protocol-stream";
import type { Workspace } from "./workspace";

/** Bindings of the demo Worker, as declared in `wrangler.jsonc`. */
export interface Env {
  WORKSPACE: DurableObjectNamespace<Workspace>;
  LOADER: WorkerLoader;
  PROGRAMS: DurableObjectNamespace<Programs>;
  /** One object per Durable Streams protocol stream (`/v1/stream/*`). */
  PROTOCOL_STREAMS: DurableObjectNamespace<ProtocolStream>;
  /** Optional `--var`: the protocol's long-poll timeout in ms (default 20000). */
  DS_LONG_POLL_MS?: string;
}
