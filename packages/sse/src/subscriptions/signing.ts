import type { ProtocolStore } from "../protocol/store";

/** The public half of the hub's webhook signing key, as JWKS lists it. */
export interface DurableStreamsWebhookJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid: string;
  use: "sig";
  alg: "EdDSA";
}

/** What a callback token proves: the subscription, wake and generation it was minted for. */
export type TokenClaims = { subscription: string; generation: number; wakeId: string };

/** Why a token is refused. */
export type TokenProblem = "TOKEN_INVALID" | "TOKEN_EXPIRED";

/** How long a callback token is good for, whatever the lease (seconds). */
const TOKEN_TTL_S = 3600;
/** Longest token read; anything longer is refused unread. */
const MAX_TOKEN_LENGTH = 1024;

const encoder = new TextEncoder();

/**
 * The hub's keys, kept in `dk_sse_keys` and made on first use: an Ed25519 pair that signs webhook
 * notifications (`webhook-signature: t=<s>,kid=<kid>,ed25519=<base64url>` over `"<t>.<body>"`, its
 * public half served as JWKS), and an HMAC-SHA-256 key that mints callback tokens. A token names its
 * subscription, wake and generation and is checked by its MAC, so an ack proves which exchange it
 * belongs to without any token being stored.
 */
export class HubKeys {
  readonly #store: ProtocolStore;
  readonly #now: () => number;
  #signing: Promise<{ key: CryptoKey; jwk: DurableStreamsWebhookJwk }> | null = null;
  #mac: Promise<CryptoKey> | null = null;

  constructor(store: ProtocolStore, now: () => number) {
    this.#store = store;
    this.#now = now;
  }

  /** The public signing key (one key: rotation is a new hub key, not supported in this version). */
  async jwk(): Promise<DurableStreamsWebhookJwk> {
    return (await this.#signingKey()).jwk;
  }

  /** The signing key's id, once {@link jwk} has made the key (else null); read without waiting. */
  kid(): string | null {
    return this.#read("ed25519-kid");
  }

  /** The `webhook-signature` header for `body`, signed now. */
  async sign(body: string): Promise<string> {
    const { key, jwk } = await this.#signingKey();
    const t = Math.floor(this.#now() / 1000);
    const signature = await crypto.subtle.sign("Ed25519", key, encoder.encode(`${t}.${body}`));
    return `t=${t},kid=${jwk.kid},ed25519=${base64url(new Uint8Array(signature))}`;
  }

  /** A callback token for one wake of one subscription. */
  async mint(claims: TokenClaims): Promise<string> {
    const payload = base64url(
      encoder.encode(
        JSON.stringify({
          s: claims.subscription,
          g: claims.generation,
          w: claims.wakeId,
          e: Math.floor(this.#now() / 1000) + TOKEN_TTL_S,
        }),
      ),
    );
    const mac = await crypto.subtle.sign("HMAC", await this.#macKey(), encoder.encode(payload));
    return `${payload}.${base64url(new Uint8Array(mac))}`;
  }

  /** The claims a token proves for `subscription`, or why it proves nothing. */
  async verify(token: string, subscription: string): Promise<TokenClaims | TokenProblem> {
    if (token.length > MAX_TOKEN_LENGTH) return "TOKEN_INVALID";
    const dot = token.indexOf(".");
    if (dot <= 0) return "TOKEN_INVALID";
    const payload = token.slice(0, dot);
    const mac = fromBase64url(token.slice(dot + 1));
    if (mac === null) return "TOKEN_INVALID";
    const valid = await crypto.subtle.verify(
      "HMAC",
      await this.#macKey(),
      mac,
      encoder.encode(payload),
    );
    if (!valid) return "TOKEN_INVALID";
    const bytes = fromBase64url(payload);
    if (bytes === null) return "TOKEN_INVALID";
    let claims: { s?: unknown; g?: unknown; w?: unknown; e?: unknown };
    try {
      claims = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      return "TOKEN_INVALID";
    }
    if (
      claims.s !== subscription ||
      typeof claims.g !== "number" ||
      typeof claims.w !== "string" ||
      typeof claims.e !== "number"
    ) {
      return "TOKEN_INVALID";
    }
    if (claims.e * 1000 < this.#now()) return "TOKEN_EXPIRED";
    return { subscription, generation: claims.g, wakeId: claims.w };
  }

  #signingKey(): Promise<{ key: CryptoKey; jwk: DurableStreamsWebhookJwk }> {
    this.#signing ??= this.#loadSigningKey().catch((error) => {
      this.#signing = null;
      throw error;
    });
    return this.#signing;
  }

  #macKey(): Promise<CryptoKey> {
    this.#mac ??= this.#loadMacKey().catch((error) => {
      this.#mac = null;
      throw error;
    });
    return this.#mac;
  }

  async #loadSigningKey(): Promise<{ key: CryptoKey; jwk: DurableStreamsWebhookJwk }> {
    let stored = this.#read("ed25519");
    if (stored === null) {
      const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
        "sign",
        "verify",
      ])) as CryptoKeyPair;
      const exported = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
      // Two first uses racing both generate; the first row written wins and both read it back.
      stored = this.#keep("ed25519", JSON.stringify(exported));
    }
    const jwk = JSON.parse(stored) as JsonWebKey;
    const key = await crypto.subtle.importKey("jwk", jwk, { name: "Ed25519" }, false, ["sign"]);
    const kid = `ds_${base64url(
      new Uint8Array(
        await crypto.subtle.digest(
          "SHA-256",
          encoder.encode(JSON.stringify({ crv: "Ed25519", kty: "OKP", x: jwk.x })),
        ),
      ),
    )}`;
    // Kept beside the key, so views of subscriptions name it without waiting on crypto.
    if (this.#read("ed25519-kid") === null) this.#keep("ed25519-kid", kid);
    return {
      key,
      jwk: { kty: "OKP", crv: "Ed25519", x: jwk.x as string, kid, use: "sig", alg: "EdDSA" },
    };
  }

  async #loadMacKey(): Promise<CryptoKey> {
    let stored = this.#read("hmac");
    if (stored === null) {
      stored = this.#keep("hmac", base64url(crypto.getRandomValues(new Uint8Array(32))));
    }
    const raw = fromBase64url(stored) ?? new Uint8Array();
    return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
  }

  #read(name: string): string | null {
    return (
      this.#store
        .reader()
        ?.exec<{ value: string }>("SELECT value FROM dk_sse_keys WHERE name = ?", name)
        .toArray()[0]?.value ?? null
    );
  }

  #keep(name: string, value: string): string {
    this.#store
      .writer()
      .exec(
        "INSERT OR IGNORE INTO dk_sse_keys (name, value, created_at) VALUES (?, ?, ?)",
        name,
        value,
        this.#now(),
      );
    return this.#read(name) as string;
  }
}

/** Base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The bytes of base64url text (padding optional), or null when it is not base64url. */
export function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return null;
  }
}
