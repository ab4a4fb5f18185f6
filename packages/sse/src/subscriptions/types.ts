import type { SseEvent } from "../protocol/types";
import type { DurableStreamsSubscriptionStream } from "./wakes";

/** How the hub reaches the object of a stream: anything with `fetch` (a Durable Object stub). */
export interface DurableStreamsSubscriptionsPeer {
  fetch(request: Request): Promise<Response>;
}

/** Options of {@link DurableStreamsSubscriptions}. */
export interface DurableStreamsSubscriptionsOptions {
  /**
   * The object of a stream path, reached to read the stream's tail (a `HEAD` of
   * `<basePath>/<path>`) and to append a pull-wake subscription's wake events (a `POST`).
   */
  peer: (streamId: string) => DurableStreamsSubscriptionsPeer;
  /**
   * Sends a webhook notification (a signed `POST`). Every delivery goes out through it, so the host
   * decides what it may reach — a test's local receiver, a route to another object. Without it,
   * webhook subscriptions are refused (`INVALID_REQUEST`); pull-wake ones still work.
   */
  fetch?: (request: Request) => Promise<Response>;
  /** URL path the streams are mounted under. Default `/v1/stream`. */
  basePath?: string;
  /**
   * The origin (`https://streams.example.com`) of the callback and JWKS URLs the hub hands out.
   * Default: the origin of the request that created the subscription.
   */
  origin?: string;
  /** Most subscriptions the hub holds; a PUT past it is refused (`SUBSCRIPTION_LIMIT`). Default 1000. */
  maxSubscriptions?: number;
  /** Most streams one subscription follows; a pattern stops linking new streams past it. Default 1000. */
  maxStreamsPerSubscription?: number;
  /**
   * Failed attempts of one delivery (a webhook POST that does not answer 2xx in time, a wake event
   * the wake stream refuses) before the subscription is dead-lettered. Retries back off 1 s, 2 s,
   * 4 s … up to 60 s (±20 %). Default 10 (about 4 minutes of retries).
   */
  maxDeliveryAttempts?: number;
  /**
   * Wakes in a row that end without any acknowledgement (the lease runs out) before the
   * subscription is dead-lettered. Default 10.
   */
  maxUnackedWakes?: number;
  /** How long one webhook POST may take before it counts as failed, in ms. Default 10000. */
  deliveryTimeoutMs?: number;
  /** Clock (epoch ms). Default `Date.now`. */
  now?: () => number;
  /** Receives the hub's {@link SseEvent}s; a throwing listener is reported with `console.warn` and ignored. */
  onEvent?: (event: SseEvent) => void;
}

/** A subscription as the hub's `GET` shows it (and {@link DurableStreamsSubscriptions.list} lists it). */
export interface DurableStreamsSubscriptionView {
  id: string;
  subscription_id: string;
  type: "webhook" | "pull-wake";
  pattern?: string;
  streams: Pick<DurableStreamsSubscriptionStream, "path" | "link_type" | "acked_offset">[];
  webhook?: { url: string; signing: { alg: "ed25519"; kid: string; jwks_url: string } };
  wake_stream?: string;
  lease_ttl_ms: number;
  created_at: string;
  /** `failed` while a delivery is being retried; `dead` once dead-lettered. */
  status: "active" | "failed" | "dead";
  description?: string;
  /** The open wake, if any: its generation, holder (pull-wake) and when its lease ends. */
  wake?: { wake_id: string; generation: number; holder: string | null; lease_until: string | null };
  /** Delivery attempts of the open wake that failed, and the last failure. */
  delivery?: { attempts: number; next_attempt_at: string | null; last_error: string | null };
  /** When the subscription was dead-lettered. */
  dead_at?: string;
}
