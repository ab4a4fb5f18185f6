import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import {
  type DurableStreamsForkExportRequest,
  DurableStreamsHandler,
  type DurableStreamsPeer,
} from "@durablekit/sse";
import { Streams } from "@durablekit/streams";
import type { Env } from "./env";

/** Where the demo mounts the Durable Streams protocol; a stream's URL is `/v1/stream/<id>`. */
export const PROTOCOL_BASE_PATH = "/v1/stream";

/** The name of the demo's one subscription hub object (`SUBSCRIPTIONS`). */
export const HUB_NAME = "hub";

/** The path segment under {@link PROTOCOL_BASE_PATH} where the workspace serves its runs' events. */
export const RUN_EVENTS_PREFIX = "runs";

/** The long-poll timeout of the demo (and the SSE keep-alive interval), unless `DS_LONG_POLL_MS` says otherwise. */
const DEFAULT_LONG_POLL_MS = 20_000;

/**
 * One Durable Stream of the protocol at `/v1/stream/*`: one object per stream path (named by the
 * stream id), holding the stream's `Streams` log and the protocol handler over it. A fork reaches
 * its source's object through the handler's peer calls, `exportFork` and `releaseFork`, over RPC.
 * The object's one alarm runs the log's retention (TTL and `Stream-Expires-At`) and retries fork
 * releases and subscription-hub notices that did not land.
 */
export class ProtocolStream extends DurableObject<Env> {
  readonly streams = new Streams(this.ctx);
  readonly protocol = new DurableStreamsHandler(this.ctx, {
    streams: this.streams,
    basePath: PROTOCOL_BASE_PATH,
    longPollTimeoutMs: longPollMs(this.env),
    peer: (streamId) =>
      this.env.PROTOCOL_STREAMS.getByName(streamId) as unknown as DurableStreamsPeer,
    hub: () => this.env.SUBSCRIPTIONS.getByName(HUB_NAME),
  });
  // Retention goes first in `parts`: its sweep (which may expire forks) starts before the handler
  // gives expired forks' references back.
  readonly alarms = new Alarms(this.ctx, { parts: [this.streams, this.protocol] });

  override alarm() {
    return this.alarms.alarm();
  }

  /** A protocol request for this object's stream (forwarded by the `/v1/stream/*` routes). */
  override fetch(request: Request): Promise<Response> {
    return this.protocol.fetch(request);
  }

  /** Peer call from a fork's object: a reference on this stream and the data the fork inherits. */
  exportFork(sourceId: string, request: DurableStreamsForkExportRequest) {
    return this.protocol.exportFork(sourceId, request);
  }

  /** Peer call from a fork's object: the fork lets go of its reference on this stream. */
  releaseFork(sourceId: string, ref: string): Promise<void> {
    return this.protocol.releaseFork(sourceId, ref);
  }
}

/** The protocol's long-poll timeout: `DS_LONG_POLL_MS` when it is a positive number, else the default. */
function longPollMs(env: Env): number {
  const value = Number(env.DS_LONG_POLL_MS ?? DEFAULT_LONG_POLL_MS);
  return Number.isFinite(value) && value > 0 ? value : DEFAULT_LONG_POLL_MS;
}
