import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { Inspector, inspectorResponse } from "@durablekit/inspect";
import { DurableStreamsSubscriptions } from "@durablekit/sse";
import type { Env } from "./env";
import { PROTOCOL_BASE_PATH } from "./protocol-stream";
import { protocolObject } from "./stream-objects";
import { deliverWebhook } from "./webhooks";

/**
 * The Durable Streams subscription hub (`/v1/stream/__ds/*`): every subscription of the demo, and
 * the tails of every protocol stream, which each stream's object reports after a change. It reads a
 * stream's tail, and appends a pull-wake subscription's wake events, through the stream's own
 * object; it sends webhooks through {@link deliverWebhook}. Its one alarm retries deliveries and
 * ends leases.
 */
export class SubscriptionHub extends DurableObject<Env> {
  readonly subscriptions = new DurableStreamsSubscriptions(this.ctx, {
    basePath: PROTOCOL_BASE_PATH,
    peer: (path) => protocolObject(this.env, path),
    fetch: (request) => deliverWebhook(this.env, request),
  });
  readonly alarms = new Alarms(this.ctx, { parts: [this.subscriptions] });
  /** `GET /subscriptions/inspect/`: the subscriptions, dead-lettered ones included (`DEMO_DEBUG=on`). */
  readonly inspector = new Inspector(this.ctx, { parts: [this.subscriptions] });

  override alarm() {
    return this.alarms.alarm();
  }

  /** A reserved `__ds` request (forwarded by the `/v1/stream/__ds/*` routes or a stream's handler). */
  override fetch(request: Request): Promise<Response> {
    return this.subscriptions.fetch(request);
  }

  /** Serves the inspector below `basePath`; the object itself refuses unless `DEMO_DEBUG=on`. */
  inspect(request: Request, basePath: string): Promise<Response> {
    return inspectorResponse(request, this.inspector, {
      basePath,
      authorize: () => this.env.DEMO_DEBUG === "on",
    });
  }

  /** The hub's public signing keys, for a receiver in another object. */
  jwks() {
    return this.subscriptions.jwks();
  }

  /** A stream's object reports a change; the hub reads the stream's tail from it. */
  streamChanged(streamId: string): Promise<void> {
    return this.subscriptions.streamChanged(streamId);
  }
}
