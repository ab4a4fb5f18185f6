import type { ChatRoom } from "./chat-room";
import type { Programs } from "./programs";
import type { ProtocolStream } from "./protocol-stream";
import type { Shard } from "./shard";
import type { SubscriptionHub } from "./subscription-hub";
import type { Workspace } from "./workspace";

/** Bindings and config vars of the demo Worker, as declared in `wrangler.jsonc`. */
export interface Env {
  WORKSPACE: DurableObjectNamespace<Workspace>;
  LOADER: WorkerLoader;
  PROGRAMS: DurableObjectNamespace<Programs>;
  /** One object per Durable Streams protocol stream (`/v1/stream/*`). */
  PROTOCOL_STREAMS: DurableObjectNamespace<ProtocolStream>;
  /** The Durable Streams subscription hub (`/v1/stream/__ds/*`), one object named `hub`. */
  SUBSCRIPTIONS: DurableObjectNamespace<SubscriptionHub>;
  /** The shard objects `demo.fanout@v1`'s child runs run in (`shard-0` … `shard-99`). */
  SHARD: DurableObjectNamespace<Shard>;
  /** One object per chat (`/chat`, `/chat/:chatId/stream`), named by the chat id. */
  CHAT: DurableObjectNamespace<ChatRoom>;
  /** Optional `--var`: the scripted chat model's delay between tokens in ms (default 25). */
  CHAT_TOKEN_DELAY_MS?: string;
  /**
   * Optional `--var`: what the recovery of a chat turn cut by a restart does. `continue` (default):
   * the scripted model finishes it from the stored chunks; `end`: the turn ends with an error
   * chunk, as for a model that cannot continue (a resume that comes first ends it).
   */
  CHAT_RECOVERY?: string;
  /** Optional `--var`: how soon a chat turn cut by a restart is recovered, in ms (default 2000). */
  CHAT_RECOVERY_MS?: string;
  /** Optional `--var`: the protocol's long-poll timeout in ms (default 20000). */
  DS_LONG_POLL_MS?: string;
  /** Optional `--var`: how long `GET /streams/:id/sse` waits for a stream not created yet, in ms (default 10000). */
  DEMO_SSE_WAIT_MS?: string;
  /** `on` enables the `/debug/*` routes (off by default: they expose chunks and counters). */
  DEMO_DEBUG?: string;
  /** Comma-separated hosts the demo answers (`name` or `name:port`); default loopback on any port. */
  DEMO_ALLOWED_HOSTS?: string;
  /** Comma-separated origins (besides the server's own) allowed to send mutating requests. */
  DEMO_ALLOWED_ORIGINS?: string;
}
