import { readBoundedBody } from "../protocol/body";
import type { SseEvent } from "../protocol/types";
import type { HubKeys } from "./signing";
import type { SubscriptionConfig, SubscriptionRow, SubscriptionStore } from "./store";
import type { DurableStreamsSubscriptionsPeer } from "./types";
import { NO_WAKE, type Wakes } from "./wakes";

/** Largest webhook answer read (its `{ "done": true }`); a longer answer is read as not done. */
const MAX_ANSWER_BYTES = 65_536;
/** First retry delay and its ceiling (ms). */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;
/** Most deliveries one pass starts. */
const PASS_LIMIT = 100;

/** The delay before retry `attempts` (1 for the first failure): 1 s doubling to 60 s, ±20 %. */
export function retryDelayMs(attempts: number): number {
  const base = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), MAX_RETRY_MS);
  return Math.round(base * (0.8 + 0.4 * Math.random()));
}

/** What a delivery needs from its hub. */
export interface DeliveryContext {
  readonly store: SubscriptionStore;
  readonly wakes: Wakes;
  readonly keys: HubKeys;
  readonly basePath: string;
  readonly fetch: ((request: Request) => Promise<Response>) | undefined;
  readonly peer: (streamId: string) => DurableStreamsSubscriptionsPeer;
  readonly maxDeliveryAttempts: number;
  readonly deliveryTimeoutMs: number;
  now(): number;
  emit(event: SseEvent): void;
  /** The callback URL of a subscription. */
  callbackUrl(row: SubscriptionRow): string;
  /** Asks the alarm for the hub's next wake (earlier-only). */
  schedule(): void;
}

/**
 * Delivers open wakes whose delivery is due: a webhook subscription's signed `POST`, a pull-wake
 * subscription's event on its wake stream. An attempt is recorded before it goes out (its row is
 * due again after the delivery timeout), so a crash mid-delivery means a retry, never a loss; an
 * outcome is applied only to the wake it was for. Passes never overlap; a pass asked for while one
 * runs runs after it.
 */
export class Deliveries {
  readonly #hub: DeliveryContext;
  #running: Promise<void> | null = null;
  #again = false;

  constructor(hub: DeliveryContext) {
    this.#hub = hub;
  }

  /** Runs a pass now (or after the one running) and resolves when passes stop. */
  run(): Promise<void> {
    if (this.#running !== null) {
      this.#again = true;
      return this.#running;
    }
    const running = this.#passes();
    this.#running = running;
    // Cleared from outside the passes: passes that find nothing settle at once, before the
    // assignment above; clearing inside them would leave the settled promise in place for good.
    void running.finally(() => {
      if (this.#running === running) this.#running = null;
      this.#hub.schedule();
    });
    return running;
  }

  async #passes(): Promise<void> {
    do {
      this.#again = false;
      const due = this.#hub.store.due(this.#hub.now(), PASS_LIMIT);
      await Promise.all(due.map((row) => this.#deliver(row)));
      if (due.length === PASS_LIMIT) this.#again = true;
    } while (this.#again);
  }

  async #deliver(due: SubscriptionRow): Promise<void> {
    const hub = this.#hub;
    if (due.wake_id === null || due.status === "dead") return;
    const request = due.type === "webhook" ? await this.#notification(due) : this.#wakeEvent(due);
    // Claim the attempt, unless the wake moved on while the request was built.
    const row = hub.store.get(due.id);
    if (
      row === null ||
      row.wake_id !== due.wake_id ||
      row.due_at === null ||
      row.due_at > hub.now()
    )
      return;
    const attempts = row.attempts + 1;
    hub.store.patch(row.id, { attempts, due_at: hub.now() + hub.deliveryTimeoutMs + 1_000 });
    // The retry of an attempt cut off by a crash: the alarm at its new due time.
    hub.schedule();
    let failure: string | null = null;
    let done = false;
    try {
      if (request === null) throw new Error("Webhook delivery is not enabled on this hub.");
      const send =
        row.type === "webhook"
          ? (hub.fetch as (request: Request) => Promise<Response>)(request)
          : hub.peer(config(row).wake_stream as string).fetch(request);
      // A receiver that never answers must not hold the pass (and every delivery behind it).
      const response = await withTimeout(send, hub.deliveryTimeoutMs);
      if (response.ok) done = row.type === "webhook" && (await answeredDone(response));
      else {
        failure = `answered ${response.status}`;
        await response.body?.cancel();
      }
    } catch (error) {
      failure = (error as Error)?.message ?? String(error);
    }
    this.#settle(row, attempts, failure, done);
  }

  /** Applies a delivery's outcome to its wake, if that wake is still open. */
  #settle(row: SubscriptionRow, attempts: number, failure: string | null, done: boolean): void {
    const hub = this.#hub;
    hub.store.transaction(() => {
      const now = hub.now();
      const current = hub.store.get(row.id);
      if (current === null || current.wake_id !== row.wake_id) return;
      if (failure === null) {
        hub.store.patch(row.id, {
          status: "active",
          due_at: null,
          attempts: 0,
          last_error: null,
          lease_until:
            row.type === "webhook" ? now + config(row).lease_ttl_ms : current.lease_until,
        });
        hub.emit({
          type: "sse:subscription-delivered",
          subscriptionId: row.id,
          wakeId: row.wake_id as string,
          generation: row.generation,
          attempts,
        });
        if (done) {
          hub.wakes.ackSnapshot(current);
          if (hub.wakes.close(row.id)) this.#again = true;
        }
        return;
      }
      if (attempts >= hub.maxDeliveryAttempts) {
        const reason = `${attempts} delivery attempts failed; the last ${failure}.`;
        // The wake closes with nothing acknowledged; a revival opens a new one over the same data.
        hub.store.patch(row.id, { ...NO_WAKE, status: "dead", dead_at: now, last_error: reason });
        hub.emit({ type: "sse:subscription-dead", subscriptionId: row.id, reason });
        return;
      }
      const retryAt = now + retryDelayMs(attempts);
      hub.store.patch(row.id, { status: "failed", due_at: retryAt, last_error: failure });
      hub.emit({
        type: "sse:subscription-delivery-failed",
        subscriptionId: row.id,
        wakeId: row.wake_id as string,
        attempts,
        retryAt,
        error: failure,
      });
    });
  }

  /** The signed webhook notification of an open wake, or null without a `fetch`. */
  async #notification(row: SubscriptionRow): Promise<Request | null> {
    const hub = this.#hub;
    if (hub.fetch === undefined) return null;
    const body = JSON.stringify({
      subscription_id: row.id,
      wake_id: row.wake_id,
      generation: row.generation,
      streams: hub.wakes.streams(row),
      callback_url: hub.callbackUrl(row),
      callback_token: await hub.keys.mint({
        subscription: row.id,
        generation: row.generation,
        wakeId: row.wake_id as string,
      }),
    });
    return new Request(config(row).webhook?.url as string, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "webhook-signature": await hub.keys.sign(body),
      },
      body,
      signal: AbortSignal.timeout(hub.deliveryTimeoutMs),
    });
  }

  /** The event a pull-wake subscription's wake stream gets for an open wake. */
  #wakeEvent(row: SubscriptionRow): Request {
    const hub = this.#hub;
    const stream = config(row).wake_stream as string;
    const first = hub.wakes.streams(row).find((item) => item.has_pending);
    return new Request(`https://hub.internal${hub.basePath}/${encodePath(stream)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        type: "wake",
        subscription_id: row.id,
        wake_id: row.wake_id,
        generation: row.generation,
        stream: first?.path ?? null,
        ts: hub.now(),
      }),
    });
  }
}

/** A subscription row's configuration. */
export function config(row: SubscriptionRow): SubscriptionConfig {
  return JSON.parse(row.config);
}

/** A stream path as a URL path: each segment percent-encoded. */
export function encodePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

/** True when a webhook's answer is a JSON object with `done: true` (read up to 64 KiB). */
async function answeredDone(response: Response): Promise<boolean> {
  const body = await readBoundedBody(response, MAX_ANSWER_BYTES);
  if (!body.ok) return false;
  try {
    return (
      (JSON.parse(new TextDecoder().decode(body.bytes)) as { done?: unknown } | null)?.done === true
    );
  } catch {
    return false;
  }
}

/**
 * `promise`, or a rejection after `ms`. The request carries no `AbortSignal` (a host's `fetch` may
 * pass it over RPC, which cannot carry one); a late answer is ignored.
 */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
