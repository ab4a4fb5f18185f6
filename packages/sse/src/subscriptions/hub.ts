import {
  type AlarmPart,
  createEmitter,
  createOptionChecks,
  requestWake,
} from "@durablekit/compose";
import { SseArgumentError } from "../errors";
import { parseOffset } from "../protocol/offsets";
import { preflight } from "../protocol/responses";
import { ProtocolStore } from "../protocol/store";
import type { SseEvent } from "../protocol/types";
import { isRefusal, json, noContent, type Refusal, refusal, refused } from "./answers";
import { config, Deliveries, encodePath } from "./delivery";
import { matchesPattern } from "./glob";
import {
  bearer,
  type ControlRoute,
  claimWorker,
  controlRoute,
  createInput,
  readJson,
  streamPath,
  streamPaths,
  type WakeRequest,
  wakeRequest,
} from "./requests";
import { type DurableStreamsWebhookJwk, HubKeys } from "./signing";
import { type SubscriptionConfig, type SubscriptionRow, SubscriptionStore } from "./store";
import type {
  DurableStreamsSubscriptionsOptions,
  DurableStreamsSubscriptionsPeer,
  DurableStreamsSubscriptionView,
} from "./types";
import { NO_WAKE, Wakes } from "./wakes";
import { webhookUrlProblem } from "./webhook-url";

/** The door checks of `@durablekit/compose`, throwing `sse/invalid-argument`. */
const check = createOptionChecks((message) => new SseArgumentError(message));

/** Most lease ends one alarm pass handles. */
const EXPIRY_LIMIT = 100;

/**
 * The Durable Streams subscription APIs (the protocol's reserved `<basePath>/__ds/*` routes) in one
 * Durable Object, the hub of every stream whose handler names it (`hub` option of
 * `DurableStreamsHandler`):
 *
 * - `PUT|GET|DELETE __ds/subscriptions/:id`: webhook or pull-wake subscriptions over a pattern
 *   (`*` one segment, `**` any) and/or explicit streams; `POST :id/streams`, `DELETE :id/streams/:path`;
 * - webhooks: a signed `POST` per wake (`webhook-signature`, Ed25519, keys at `__ds/jwks.json`),
 *   retried with back-off; `POST :id/callback` (Bearer token) acknowledges, `{ "done": true }` in
 *   the webhook's answer acknowledges the whole wake;
 * - pull-wake: a wake event on the subscription's wake stream; `POST :id/claim`, `:id/ack`,
 *   `:id/release`, one holder at a time under a lease.
 *
 * Every wake has a generation; a token proves (by its MAC) the subscription, wake and generation it
 * was minted for, and an ack for any other wake is refused `FENCED`. Every state change is one
 * transaction in the object's SQLite; deliveries start at once and the alarm retries them and ends
 * leases: list the hub in the object's `Alarms`.
 *
 * ```ts
 * readonly subscriptions = new DurableStreamsSubscriptions(this.ctx, {
 *   peer: (path) => this.env.STREAMS.getByName(path),
 *   fetch: (request) => fetch(request),
 * });
 * readonly alarms = new Alarms(this.ctx, { parts: [this.subscriptions] });
 * ```
 */
export class DurableStreamsSubscriptions implements AlarmPart {
  readonly #ctx: DurableObjectState;
  readonly #store: SubscriptionStore;
  readonly #wakes: Wakes;
  readonly #keys: HubKeys;
  readonly #deliveries: Deliveries;
  readonly #peer: (streamId: string) => DurableStreamsSubscriptionsPeer;
  readonly #fetch: ((request: Request) => Promise<Response>) | undefined;
  readonly #basePath: string;
  readonly #origin: string | undefined;
  readonly #maxSubscriptions: number;
  readonly #maxStreams: number;
  readonly #now: () => number;
  readonly #emit: (event: SseEvent) => void;

  /** @throws {SseArgumentError} `sse/invalid-argument` for a malformed `ctx` or option, or without `peer`. */
  constructor(ctx: DurableObjectState, options: DurableStreamsSubscriptionsOptions) {
    const usage = "new DurableStreamsSubscriptions(ctx, { peer, fetch? })";
    check.ctx(ctx, usage);
    if (options === null || typeof options !== "object" || typeof options.peer !== "function") {
      throw new SseArgumentError(
        `${usage} takes an options object whose peer(path) returns the stream's object (a stub with fetch).`,
      );
    }
    check.callback(options.fetch, "fetch");
    check.callback(options.now, "now");
    check.callback(options.onEvent, "onEvent");
    if (options.basePath !== undefined && typeof options.basePath !== "string") {
      throw new SseArgumentError(`basePath must be a string; got ${typeof options.basePath}.`);
    }
    const basePath = (options.basePath ?? "/v1/stream").replace(/\/+$/, "");
    if (!basePath.startsWith("/") && basePath !== "") {
      throw new SseArgumentError(`basePath must start with "/"; got "${options.basePath}".`);
    }
    if (options.origin !== undefined) {
      let origin: string | null = null;
      try {
        origin = new URL(options.origin).origin;
      } catch {}
      if (origin === null || origin === "null") {
        throw new SseArgumentError(`origin must be an http(s) origin; got "${options.origin}".`);
      }
      this.#origin = origin;
    }
    this.#maxSubscriptions = check.count(options.maxSubscriptions, "maxSubscriptions", 1000, {
      min: 1,
    });
    this.#maxStreams = check.count(
      options.maxStreamsPerSubscription,
      "maxStreamsPerSubscription",
      1000,
      { min: 1 },
    );
    const maxDeliveryAttempts = check.count(
      options.maxDeliveryAttempts,
      "maxDeliveryAttempts",
      10,
      {
        min: 1,
      },
    );
    const maxUnackedWakes = check.count(options.maxUnackedWakes, "maxUnackedWakes", 10, { min: 1 });
    const deliveryTimeoutMs = check.ms(options.deliveryTimeoutMs, "deliveryTimeoutMs", 10_000, {
      min: 1,
    });
    this.#ctx = ctx;
    this.#now = options.now ?? Date.now;
    this.#emit = createEmitter<SseEvent>("@durablekit/sse", options.onEvent);
    this.#peer = options.peer;
    this.#fetch = options.fetch;
    this.#basePath = basePath;
    const protocolStore = new ProtocolStore(ctx.storage);
    this.#store = new SubscriptionStore(protocolStore);
    this.#wakes = new Wakes(this.#store, {
      maxUnackedWakes,
      now: this.#now,
      onDead: (subscriptionId, reason) =>
        this.#emit({ type: "sse:subscription-dead", subscriptionId, reason }),
    });
    this.#keys = new HubKeys(protocolStore, this.#now);
    this.#deliveries = new Deliveries({
      store: this.#store,
      wakes: this.#wakes,
      keys: this.#keys,
      basePath,
      fetch: options.fetch,
      peer: options.peer,
      maxDeliveryAttempts,
      deliveryTimeoutMs,
      now: this.#now,
      emit: this.#emit,
      callbackUrl: (row) => this.#actionUrl(row, "callback"),
      schedule: () => this.#schedule(),
    });
  }

  /**
   * Answers a reserved `<basePath>/__ds/*` request. Never throws: refusals are JSON answers
   * `{ "error": { "code", "message" } }` with the protocol's codes, an unexpected failure a 500.
   */
  async fetch(request: Request): Promise<Response> {
    try {
      if (request.method === "OPTIONS") return preflight();
      const url = new URL(request.url);
      const prefix = `${this.#basePath}/__ds/`;
      let rest: string | null = null;
      if (url.pathname.startsWith(prefix)) {
        try {
          rest = decodeURIComponent(url.pathname.slice(prefix.length));
        } catch {}
      }
      const route = rest === null ? null : controlRoute(rest);
      if (route === null) {
        return refused(refusal("SUBSCRIPTION_NOT_FOUND", "No control route lives here."));
      }
      const answer = await this.#route(route, request, url);
      return isRefusal(answer) ? refused(answer) : answer;
    } catch (error) {
      this.#emit({ type: "sse:request-failed", method: request.method, url: request.url, error });
      return json(500, {
        error: { code: "INTERNAL", message: (error as Error)?.message ?? String(error) },
      });
    }
  }

  /**
   * A stream changed (called by the stream's handler once the change is durable). The hub reads the
   * stream's tail from its object, links it to the pattern subscriptions it matches, and opens a
   * wake for each subscription that now has pending work. Idempotent: calling it again reads again.
   * A malformed path is ignored.
   * @throws the stream object's failure to answer (the handler retries through its alarm).
   */
  async streamChanged(streamId: string): Promise<void> {
    const path = streamPath(streamId);
    if (path === null) return;
    const tail = await this.#readTail(path);
    let opened = false;
    this.#store.transaction(() => {
      if (tail === null) {
        this.#store.deleteTail(path);
        this.#store.unlinkPath(path);
        return;
      }
      this.#store.setTail(path, tail);
      for (const row of this.#store.withPattern()) {
        const { pattern, wake_stream } = config(row);
        if (
          pattern !== null &&
          path !== wake_stream &&
          matchesPattern(pattern, path) &&
          !this.#store.hasLink(row.id, path) &&
          this.#store.linkCount(row.id) < this.#maxStreams
        ) {
          // Linked by its first append: everything in it is new to the subscription.
          this.#store.link(row.id, path, "glob", -1);
        }
      }
      for (const id of this.#store.linkedTo(path)) {
        const row = this.#store.get(id);
        if (row !== null && this.#wakes.open(row)) opened = true;
      }
    });
    if (opened) {
      // The alarm backs the delivery up: a crash before it goes out leaves it due.
      this.#schedule();
      void this.#deliveries.run();
    }
  }

  /** A subscription as its `GET` shows it, or null. */
  get(id: string): DurableStreamsSubscriptionView | null {
    const row = this.#store.get(id);
    return row === null ? null : this.#view(row);
  }

  /**
   * Subscriptions in id order, dead-lettered ones included (`status: "dead"`), a page at a time:
   * at most `limit` (1–1000, default 100), after the `cursor` of the page before.
   * @throws {SseArgumentError} `sse/invalid-argument` for a malformed `limit` or `cursor`.
   */
  list(options: { limit?: number; cursor?: string } = {}): {
    items: DurableStreamsSubscriptionView[];
    next: string | null;
  } {
    check.options(options, "list() options");
    const limit = check.count(options.limit, "limit", 100, { min: 1, max: 1000 });
    if (options.cursor !== undefined && typeof options.cursor !== "string") {
      throw new SseArgumentError("cursor must be the next of the page before.");
    }
    const rows = this.#store.list(limit + 1, options.cursor ?? "");
    const items = rows.slice(0, limit).map((row) => this.#view(row));
    return { items, next: rows.length > limit ? (items.at(-1)?.id ?? null) : null };
  }

  /** The hub's public signing keys (what `__ds/jwks.json` serves), for a receiver's `jwks` option. */
  async jwks(): Promise<{ keys: DurableStreamsWebhookJwk[] }> {
    return { keys: [await this.#keys.jwk()] };
  }

  /** When the hub next needs the alarm (a delivery due, a lease ending), or null. */
  nextWakeAt(): number | null {
    return this.#store.nextWakeAt();
  }

  /** Called through `Alarms`: ends the leases that ran out, then runs the deliveries that are due. */
  async alarm(): Promise<void> {
    this.#expireLeases();
    await this.#deliveries.run();
  }

  // ── Routes ──

  async #route(route: ControlRoute, request: Request, url: URL): Promise<Response | Refusal> {
    const method = request.method;
    if (route.kind === "jwks") {
      if (method !== "GET" && method !== "HEAD") return notAllowed("GET");
      return json(
        200,
        { keys: [await this.#keys.jwk()] },
        {
          "Content-Type": "application/jwk-set+json",
          "Cache-Control": "public, max-age=300",
        },
      );
    }
    if (route.kind === "subscription") {
      if (method === "PUT") return this.#put(route.id, request, url);
      if (method === "GET") {
        const view = this.get(route.id);
        return view === null ? notFound(route.id) : json(200, view);
      }
      if (method === "DELETE") {
        this.#store.transaction(() => this.#store.delete(route.id));
        return noContent();
      }
      return notAllowed("GET, PUT, DELETE");
    }
    if (method !== (route.kind === "stream" ? "DELETE" : "POST")) {
      return notAllowed(route.kind === "stream" ? "DELETE" : "POST");
    }
    if (route.kind === "stream") {
      if (this.#store.get(route.id) === null) return notFound(route.id);
      this.#store.transaction(() => this.#store.unlinkExplicit(route.id, route.path));
      return noContent();
    }
    const body = await readJson(request);
    if (isRefusal(body)) return body;
    switch (route.kind) {
      case "streams":
        return this.#addStreams(route.id, body);
      case "claim":
        return this.#claim(route.id, body);
      default:
        return this.#answerWake(route.kind, route.id, request, body);
    }
  }

  async #put(id: string, request: Request, url: URL): Promise<Response | Refusal> {
    const body = await readJson(request);
    if (isRefusal(body)) return body;
    const input = createInput(body);
    if (isRefusal(input)) return input;
    if (input.type === "webhook") {
      if (this.#fetch === undefined) {
        return refusal("INVALID_REQUEST", "Webhook subscriptions are not enabled on this server.");
      }
      const problem = webhookUrlProblem(input.webhook?.url as string);
      if (problem !== null) return refusal("WEBHOOK_URL_REJECTED", problem);
    }
    const hash = await configHash(input);
    // The signing key exists before any view names it.
    await this.#keys.jwk();
    // Explicit streams start at their tail: read it before the transaction.
    const tails =
      this.#store.get(id) === null
        ? await Promise.all(input.streams.map((path) => this.#readTail(path)))
        : [];
    const outcome = this.#store.transaction((): Refusal | { created: boolean } => {
      const row = this.#store.get(id);
      if (row !== null) {
        if (row.config_hash !== hash) {
          return refusal(
            "SUBSCRIPTION_ALREADY_EXISTS",
            `Subscription "${id}" exists with another configuration; DELETE it first.`,
          );
        }
        if (row.status === "dead") {
          // A confirming PUT revives a dead-lettered subscription.
          this.#store.patch(id, { status: "active", dead_at: null, unacked_wakes: 0, attempts: 0 });
          this.#wakes.open({ ...row, status: "active", unacked_wakes: 0 });
        }
        return { created: false };
      }
      if (this.#store.count() >= this.#maxSubscriptions) {
        return refusal(
          "SUBSCRIPTION_LIMIT",
          `This hub holds at most ${this.#maxSubscriptions} subscriptions.`,
        );
      }
      if (input.streams.length > this.#maxStreams) {
        return refusal(
          "SUBSCRIPTION_LIMIT",
          `A subscription follows at most ${this.#maxStreams} streams.`,
        );
      }
      this.#store.insert(newRow(id, input, hash, this.#origin ?? url.origin, this.#now()));
      input.streams.forEach((path, i) => {
        const tail = tails[i];
        if (tail !== null && tail !== undefined) this.#store.setTail(path, tail);
      });
      const matching =
        input.pattern === null
          ? []
          : this.#store
              .tails()
              .map((tail) => tail.path)
              .filter(
                (path) =>
                  path !== input.wake_stream &&
                  !input.streams.includes(path) &&
                  matchesPattern(input.pattern as string, path),
              )
              .slice(0, this.#maxStreams - input.streams.length);
      this.#wakes.linkInitial(id, input, matching);
      return { created: true };
    });
    if (isRefusal(outcome)) return outcome;
    this.#schedule();
    void this.#deliveries.run();
    return json(outcome.created ? 201 : 200, this.get(id));
  }

  async #addStreams(id: string, body: Record<string, unknown>): Promise<Response | Refusal> {
    const paths = streamPaths(body.streams, "streams");
    if (isRefusal(paths)) return paths;
    if (this.#store.get(id) === null) return notFound(id);
    const tails = await Promise.all(paths.map((path) => this.#readTail(path)));
    const outcome = this.#store.transaction((): Refusal | null => {
      if (this.#store.get(id) === null) return notFound(id);
      const fresh = paths.filter((path) => !this.#store.hasLink(id, path));
      if (this.#store.linkCount(id) + fresh.length > this.#maxStreams) {
        return refusal(
          "SUBSCRIPTION_LIMIT",
          `A subscription follows at most ${this.#maxStreams} streams.`,
        );
      }
      paths.forEach((path, i) => {
        const tail = tails[i];
        if (tail !== null && tail !== undefined) this.#store.setTail(path, tail);
        this.#store.link(id, path, "explicit", this.#store.tail(path) ?? 0);
      });
      return null;
    });
    return outcome ?? noContent();
  }

  async #claim(id: string, body: Record<string, unknown>): Promise<Response | Refusal> {
    const worker = claimWorker(body);
    if (isRefusal(worker)) return worker;
    this.#expireLeases(id);
    const outcome = this.#store.transaction((): Refusal | SubscriptionRow => {
      const row = this.#store.get(id);
      if (row === null) return notFound(id);
      if (row.type !== "pull-wake")
        return refusal("INVALID_REQUEST", "Only a pull-wake subscription is claimed.");
      if (row.status === "dead") return dead(row);
      if (row.holder !== null) {
        return refusal("ALREADY_CLAIMED", `The wake is held by "${row.holder}".`, {
          current_holder: row.holder,
          generation: row.generation,
        });
      }
      if (row.wake_id === null && !this.#wakes.open(row, false)) {
        return refusal("NO_PENDING_WORK", "No stream of this subscription has data past its ack.");
      }
      this.#store.patch(id, {
        holder: worker,
        lease_until: this.#now() + config(row).lease_ttl_ms,
        due_at: null,
      });
      return this.#store.get(id) as SubscriptionRow;
    });
    if (isRefusal(outcome)) return outcome;
    this.#schedule();
    return json(200, {
      wake_id: outcome.wake_id,
      generation: outcome.generation,
      token: await this.#keys.mint({
        subscription: id,
        generation: outcome.generation,
        wakeId: outcome.wake_id as string,
      }),
      streams: this.#wakes.streams(outcome),
      lease_ttl_ms: config(outcome).lease_ttl_ms,
    });
  }

  /** A webhook callback, or a pull-wake ack or release: proven by its token, fenced by its wake. */
  async #answerWake(
    kind: "callback" | "ack" | "release",
    id: string,
    request: Request,
    body: Record<string, unknown>,
  ): Promise<Response | Refusal> {
    const token = bearer(request);
    if (token === null)
      return refusal("TOKEN_INVALID", "Send the wake's token as Authorization: Bearer <token>.");
    const wake = wakeRequest(body);
    if (isRefusal(wake)) return wake;
    if (this.#store.get(id) === null) return notFound(id);
    const claims = await this.#keys.verify(token, id);
    if (typeof claims === "string") {
      return refusal(
        claims,
        claims === "TOKEN_EXPIRED"
          ? "The token expired."
          : "The token is not one this hub minted for this subscription.",
      );
    }
    this.#expireLeases(id);
    let opened = false;
    const outcome = this.#store.transaction((): Refusal | null => {
      const row = this.#store.get(id);
      if (row === null) return notFound(id);
      const type = kind === "callback" ? "webhook" : "pull-wake";
      if (row.type !== type)
        return refusal("INVALID_REQUEST", `Only a ${type} subscription takes ${kind}.`);
      if (!isCurrent(row, claims, wake)) {
        return refusal("FENCED", "The wake is not the subscription's current one.", {
          generation: row.generation,
        });
      }
      if (kind === "release") {
        opened = this.#wakes.close(id);
        return null;
      }
      const problem = this.#wakes.ack(row, wake.acks);
      if (problem !== null) return problem;
      if (wake.done) opened = this.#wakes.close(id);
      else this.#store.patch(id, { lease_until: this.#now() + config(row).lease_ttl_ms });
      return null;
    });
    if (outcome !== null) return outcome;
    this.#schedule();
    if (opened) void this.#deliveries.run();
    return kind === "release" ? noContent() : json(200, { ok: true, next_wake: opened });
  }

  // ── Internals ──

  /** Ends the leases that ran out (of one subscription, or every one), opening the next wakes. */
  #expireLeases(id?: string): void {
    const now = this.#now();
    let opened = false;
    this.#store.transaction(() => {
      const rows =
        id === undefined
          ? this.#store.expired(now, EXPIRY_LIMIT)
          : [this.#store.get(id)].filter(
              (row): row is SubscriptionRow =>
                row !== null && row.lease_until !== null && row.lease_until <= now,
            );
      for (const row of rows) if (this.#wakes.close(row.id)) opened = true;
    });
    if (opened) {
      this.#schedule();
      void this.#deliveries.run();
    }
  }

  /** A stream's tail seq read from its object, or null when it does not exist (or is gone). */
  async #readTail(path: string): Promise<number | null> {
    const response = await this.#peer(path).fetch(
      new Request(`https://hub.internal${this.#basePath}/${encodePath(path)}`, { method: "HEAD" }),
    );
    await response.body?.cancel();
    if (response.status === 404 || response.status === 410) return null;
    const offset = response.headers.get("Stream-Next-Offset");
    const parsed = response.ok && offset !== null ? parseOffset(offset) : null;
    if (parsed?.kind !== "seq") {
      throw new Error(
        `The object of stream "${path}" answered its HEAD with ${response.status} and no offset.`,
      );
    }
    return parsed.seq;
  }

  #schedule(): void {
    const at = this.nextWakeAt();
    if (at !== null) requestWake(this.#ctx, at).catch(() => {});
  }

  #actionUrl(row: SubscriptionRow, action: string): string {
    return `${row.origin}${this.#basePath}/__ds/subscriptions/${encodeURIComponent(row.id)}/${action}`;
  }

  #view(row: SubscriptionRow): DurableStreamsSubscriptionView {
    const input = config(row);
    const view: DurableStreamsSubscriptionView = {
      id: row.id,
      subscription_id: row.id,
      type: row.type,
      streams: this.#wakes
        .streams({ ...row, snapshot: null })
        .map(({ path, link_type, acked_offset }) => ({ path, link_type, acked_offset })),
      lease_ttl_ms: input.lease_ttl_ms,
      created_at: new Date(row.created_at).toISOString(),
      status: row.status,
    };
    if (input.pattern !== null) view.pattern = input.pattern;
    if (input.webhook !== null) {
      view.webhook = {
        url: input.webhook.url,
        signing: {
          alg: "ed25519",
          kid: this.#keys.kid() ?? "",
          jwks_url: `${row.origin}${this.#basePath}/__ds/jwks.json`,
        },
      };
    }
    if (input.wake_stream !== null) view.wake_stream = input.wake_stream;
    if (input.description !== null) view.description = input.description;
    if (row.wake_id !== null) {
      view.wake = {
        wake_id: row.wake_id,
        generation: row.generation,
        holder: row.holder,
        lease_until: row.lease_until === null ? null : new Date(row.lease_until).toISOString(),
      };
    }
    if (row.attempts > 0 || row.last_error !== null) {
      view.delivery = {
        attempts: row.attempts,
        next_attempt_at: row.due_at === null ? null : new Date(row.due_at).toISOString(),
        last_error: row.last_error,
      };
    }
    if (row.dead_at !== null) view.dead_at = new Date(row.dead_at).toISOString();
    return view;
  }
}

/** True when a token and a request both name the subscription's open wake. */
function isCurrent(
  row: SubscriptionRow,
  claims: { generation: number; wakeId: string },
  wake: WakeRequest,
): boolean {
  return (
    row.wake_id !== null &&
    claims.wakeId === row.wake_id &&
    claims.generation === row.generation &&
    wake.wake_id === row.wake_id &&
    wake.generation === row.generation
  );
}

function newRow(
  id: string,
  input: SubscriptionConfig,
  hash: string,
  origin: string,
  now: number,
): SubscriptionRow {
  return {
    id,
    type: input.type,
    config: JSON.stringify(input),
    config_hash: hash,
    origin,
    created_at: now,
    status: "active",
    generation: 0,
    ...NO_WAKE,
    attempts: 0,
    unacked_wakes: 0,
    last_error: null,
    dead_at: null,
  };
}

/** The SHA-256 of a configuration's canonical JSON: what a confirming PUT must match. */
async function configHash(input: SubscriptionConfig): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(JSON.stringify(input)),
  );
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

function notFound(id: string): Refusal {
  return refusal("SUBSCRIPTION_NOT_FOUND", `No subscription "${id}".`);
}

function dead(row: SubscriptionRow): Refusal {
  return refusal(
    "SUBSCRIPTION_DEAD",
    `Subscription "${row.id}" was dead-lettered (${row.last_error ?? "no reason"}); PUT its configuration again to revive it.`,
  );
}

function notAllowed(allow: string): Response {
  return new Response(`Use ${allow}.`, {
    status: 405,
    headers: { Allow: allow, "Content-Type": "text/plain; charset=utf-8" },
  });
}
