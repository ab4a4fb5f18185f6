import { createOptionChecks, isWellFormedName } from "@durablekit/compose";
import { SseArgumentError } from "../errors";
import { readBoundedBody } from "../protocol/body";
import { parseOffset } from "../protocol/offsets";
import { json } from "./answers";
import { type DurableStreamsWebhookJwk, fromBase64url } from "./signing";

/** The door checks of `@durablekit/compose`, throwing `sse/invalid-argument`. */
const check = createOptionChecks((message) => new SseArgumentError(message));

/** Largest notification read. */
const MAX_NOTIFICATION_BYTES = 1_048_576;
/** Most streams one notification may list. */
const MAX_STREAMS = 1000;
/** How often an unknown key id may make the receiver read the hub's keys again (ms). */
const KEY_REFRESH_MS = 60_000;

/** One batch a webhook notification carries: the positions `(from, to]` of one stream. */
export interface DurableStreamsBatch {
  subscriptionId: string;
  /** The stream's path. */
  stream: string;
  /** The seq acknowledged before this wake (0 when nothing was). */
  from: number;
  /** The stream's tail in the wake's snapshot: the batch is its chunks `from` … `to - 1`. */
  to: number;
  wakeId: string;
  generation: number;
}

/** Options of {@link DurableStreamsReceiver}. */
export interface DurableStreamsReceiverOptions {
  /** The hub's public keys (`subscriptions.jwks()` over RPC, or its `__ds/jwks.json`). */
  jwks: () => Promise<{ keys: DurableStreamsWebhookJwk[] }>;
  /** The subscriptions this receiver takes; a notification of any other is refused (403). */
  subscriptions: readonly string[];
  /**
   * Takes one batch; the notification is answered `{ "done": true }` (which acknowledges the wake)
   * only after every batch of it was taken. A batch may come again (a redelivery after a lost
   * answer, a crash), so taking it must be idempotent by `(stream, to)` — `tasks.trigger` is.
   * A throw answers 500 and the hub retries the delivery.
   */
  onBatch: (batch: DurableStreamsBatch) => unknown;
  /** How far a signature's time may be from now, in ms. Default 300000 (5 minutes). */
  toleranceMs?: number;
  /** Clock (epoch ms). Default `Date.now`. */
  now?: () => number;
}

/**
 * The receiving end of a hub's webhooks, for an object that acts on streams' appends (starts a task
 * per batch, say). It checks the `webhook-signature` against the hub's keys (Ed25519, the time
 * within `toleranceMs`), takes only its own subscriptions, reads the notification (bounded), and
 * hands each stream with pending data to `onBatch` as `(from, to]` seqs; then it answers
 * `{ "done": true }`, so the hub acknowledges the wake's snapshot. Refusals are JSON
 * `{ "error": { "code", "message" } }`: `SIGNATURE_INVALID` (401: unsigned, forged, stale, or
 * signed by an unknown key), `SUBSCRIPTION_UNKNOWN` (403), `INVALID_REQUEST` (400).
 *
 * ```ts
 * readonly receiver = new DurableStreamsReceiver(this.ctx, {
 *   jwks: () => this.env.HUB.getByName("hub").jwks(),
 *   subscriptions: ["orders"],
 *   onBatch: (batch) => this.tasks.trigger("orders.process@v1", {
 *     source: batch.stream, from: batch.from, to: batch.to,
 *   }),
 * });
 * ```
 */
export class DurableStreamsReceiver {
  readonly #options: DurableStreamsReceiverOptions;
  readonly #toleranceMs: number;
  readonly #now: () => number;
  readonly #subscriptions: ReadonlySet<string>;
  #keys: Map<string, CryptoKey> = new Map();
  #readAt = Number.NEGATIVE_INFINITY;

  /** @throws {SseArgumentError} `sse/invalid-argument` for a malformed `ctx` or option. */
  constructor(ctx: DurableObjectState, options: DurableStreamsReceiverOptions) {
    const usage = "new DurableStreamsReceiver(ctx, { jwks, subscriptions, onBatch })";
    check.ctx(ctx, usage);
    if (
      options === null ||
      typeof options !== "object" ||
      typeof options.jwks !== "function" ||
      typeof options.onBatch !== "function"
    ) {
      throw new SseArgumentError(`${usage} takes jwks() and onBatch(batch) functions.`);
    }
    if (
      !Array.isArray(options.subscriptions) ||
      options.subscriptions.length === 0 ||
      !options.subscriptions.every((id) => isWellFormedName(id, 256))
    ) {
      throw new SseArgumentError(
        "subscriptions must list the subscription ids this receiver takes (at least one).",
      );
    }
    check.callback(options.now, "now");
    this.#options = options;
    this.#toleranceMs = check.ms(options.toleranceMs, "toleranceMs", 300_000);
    this.#now = options.now ?? Date.now;
    this.#subscriptions = new Set(options.subscriptions);
  }

  /** Answers one webhook notification. Never throws: a failing `onBatch` answers 500. */
  async fetch(request: Request): Promise<Response> {
    if (request.method !== "POST") {
      return new Response("Webhook notifications are POSTed.", {
        status: 405,
        headers: { Allow: "POST" },
      });
    }
    const body = await readBoundedBody(request, MAX_NOTIFICATION_BYTES);
    if (!body.ok) return refuse(400, "INVALID_REQUEST", "The notification is too large.");
    const raw = new TextDecoder().decode(body.bytes);
    if (!(await this.#signed(request.headers.get("webhook-signature"), raw))) {
      return refuse(
        401,
        "SIGNATURE_INVALID",
        "The webhook-signature does not prove the hub sent this now.",
      );
    }
    let notification: unknown;
    try {
      notification = JSON.parse(raw);
    } catch {
      return refuse(400, "INVALID_REQUEST", "The notification is not JSON.");
    }
    const batches = batchesOf(notification);
    if (typeof batches === "string") return refuse(400, "INVALID_REQUEST", batches);
    const subscription = (notification as { subscription_id: string }).subscription_id;
    if (!this.#subscriptions.has(subscription)) {
      return refuse(403, "SUBSCRIPTION_UNKNOWN", `This receiver does not take "${subscription}".`);
    }
    try {
      for (const batch of batches) await this.#options.onBatch(batch);
    } catch (error) {
      return refuse(500, "BATCH_FAILED", (error as Error)?.message ?? String(error));
    }
    return json(200, { done: true });
  }

  /** True when the header is a fresh Ed25519 signature of `"<t>.<body>"` by a key of the hub. */
  async #signed(header: string | null, raw: string): Promise<boolean> {
    const match =
      header === null
        ? null
        : /^t=(\d{1,12}),kid=([^,]{1,128}),ed25519=([A-Za-z0-9_-]{1,200})$/.exec(header);
    if (match === null) return false;
    const [, t, kid, signature] = match as unknown as [string, string, string, string];
    if (Math.abs(this.#now() - Number(t) * 1000) > this.#toleranceMs) return false;
    const key = await this.#key(kid);
    if (key === null) return false;
    const bytes = fromBase64url(signature);
    if (bytes === null) return false;
    try {
      return await crypto.subtle.verify(
        "Ed25519",
        key,
        bytes,
        new TextEncoder().encode(`${t}.${raw}`),
      );
    } catch {
      return false;
    }
  }

  async #key(kid: string): Promise<CryptoKey | null> {
    const known = this.#keys.get(kid);
    if (known !== undefined) return known;
    if (this.#now() - this.#readAt < KEY_REFRESH_MS) return null;
    this.#readAt = this.#now();
    const keys = new Map<string, CryptoKey>();
    for (const jwk of (await this.#options.jwks()).keys ?? []) {
      if (jwk?.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") continue;
      keys.set(
        jwk.kid,
        await crypto.subtle.importKey(
          "jwk",
          { kty: "OKP", crv: "Ed25519", x: jwk.x },
          { name: "Ed25519" },
          false,
          ["verify"],
        ),
      );
    }
    this.#keys = keys;
    return keys.get(kid) ?? null;
  }
}

/** The batches of a notification, or why it is malformed. */
function batchesOf(value: unknown): DurableStreamsBatch[] | string {
  const note = value as {
    subscription_id?: unknown;
    wake_id?: unknown;
    generation?: unknown;
    streams?: unknown;
  } | null;
  if (
    note === null ||
    typeof note !== "object" ||
    typeof note.subscription_id !== "string" ||
    typeof note.wake_id !== "string" ||
    !Number.isSafeInteger(note.generation) ||
    !Array.isArray(note.streams) ||
    note.streams.length > MAX_STREAMS
  ) {
    return "A notification has subscription_id, wake_id, generation and at most 1000 streams.";
  }
  const batches: DurableStreamsBatch[] = [];
  for (const item of note.streams as unknown[]) {
    const stream = item as {
      path?: unknown;
      acked_offset?: unknown;
      tail_offset?: unknown;
      has_pending?: unknown;
    };
    if (typeof stream?.path !== "string" || typeof stream.tail_offset !== "string") {
      return "Each stream of a notification has a path and a tail_offset.";
    }
    if (stream.has_pending !== true) continue;
    const acked =
      stream.acked_offset === "-1"
        ? { kind: "seq" as const, seq: 0 }
        : parseOffset(String(stream.acked_offset));
    const tail = parseOffset(stream.tail_offset);
    if (acked.kind !== "seq" || tail.kind !== "seq")
      return `The offsets of "${stream.path}" are not offsets.`;
    if (tail.seq <= acked.seq) continue;
    batches.push({
      subscriptionId: note.subscription_id,
      stream: stream.path,
      from: acked.seq,
      to: tail.seq,
      wakeId: note.wake_id,
      generation: note.generation as number,
    });
  }
  return batches;
}

function refuse(status: number, code: string, message: string): Response {
  return json(status, { error: { code, message } });
}
