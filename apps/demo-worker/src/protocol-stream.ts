import { DurableObject } from "cloudflare:workers";
import {
  DurableStreamsHandler,
  type DurableStreamsPeer,
  type ForkExportRequest,
} from "@durablekit/sse";
import { Streams } from "@durablekit/streams";
import type { Env } from "./env";

/** Where the demo mounts the Durable Streams protocol; a stream's URL is `/v1/stream/<id>`. */
export const PROTOCOL_BASE_PATH = "/v1/stream";

/** The long-poll timeout of the demo (and the SSE keep-alive interval), unless `DS_LONG_POLL_MS` says otherwise. */
const DEFAULT_LONG_POLL_MS = 20_000;

/**
 * One Durable Stream of the protocol at `/v1/stream/*`: one object per stream path (named by the
 * stream id), holding the stream's `Streams` log and the protocol handler over it. A fork reaches
 * its source's object through the handler's peer calls, `exportFork` and `releaseFork`, over RPC.
 * The object's one alarm runs the log's retention (TTL and `Stream-Expires-At`) and retries fork
 * releases that did not land.
 */
export class ProtocolStream extends DurableObject<Env> {
  readonly streams: Streams;
  readonly protocol: DurableStreamsHandler;
  #wake: Promise<void> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const armAlarm = (at: number) => void this.#requestWake(at);
    const longPoll = Number(env.DS_LONG_POLL_MS ?? DEFAULT_LONG_POLL_MS);
    this.streams = new Streams(ctx, { armAlarm });
    this.protocol = new DurableStreamsHandler(ctx, this.streams, {
      basePath: PROTOCOL_BASE_PATH,
      longPollTimeoutMs:
        Number.isFinite(longPoll) && longPoll > 0 ? longPoll : DEFAULT_LONG_POLL_MS,
      peer: (streamId) => env.PROTOCOL_STREAMS.getByName(streamId) as unknown as DurableStreamsPeer,
      armAlarm,
    });
  }

  /** A protocol request for this object's stream (forwarded by the `/v1/stream/*` routes). */
  override fetch(request: Request): Promise<Response> {
    return this.protocol.fetch(request);
  }

  /** Peer call from a fork's object: a reference on this stream and the data the fork inherits. */
  exportFork(sourceId: string, request: ForkExportRequest) {
    return this.protocol.exportFork(sourceId, request);
  }

  /** Peer call from a fork's object: the fork lets go of its reference on this stream. */
  releaseFork(sourceId: string, ref: string): Promise<void> {
    return this.protocol.releaseFork(sourceId, ref);
  }

  /** Retention first (it may expire forks), then the handler gives expired forks' references back. */
  override async alarm(): Promise<void> {
    this.streams.alarm();
    await this.protocol.alarm();
    await this.#serialize(async () => {
      const wakes = [this.streams.nextWakeAt(), this.protocol.nextWakeAt()].filter(
        (at): at is number => at !== null,
      );
      if (wakes.length === 0) await this.ctx.storage.deleteAlarm();
      else await this.ctx.storage.setAlarm(Math.min(...wakes));
    });
  }

  #requestWake(at: number): Promise<void> {
    return this.#serialize(async () => {
      const current = await this.ctx.storage.getAlarm();
      if (current === null || at < current) await this.ctx.storage.setAlarm(at);
    });
  }

  // Alarm reads and writes run one after another, so a later decision never loses to an earlier one.
  #serialize(fn: () => Promise<void>): Promise<void> {
    this.#wake = this.#wake.then(fn).catch((error) => {
      console.error("protocol stream: arming the alarm failed", error);
    });
    return this.#wake;
  }
}
