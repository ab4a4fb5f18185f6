import type { Env } from "./env";
import { errorResponse } from "./http";

/** Hosts the demo answers unless `DEMO_ALLOWED_HOSTS` says otherwise: loopback, any port. */
const LOOPBACK_HOSTS = "localhost,127.0.0.1,[::1]";

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** One allowed host: a name, and a port or any port. */
interface HostPattern {
  name: string;
  port: string | null;
}

function parseHost(text: string): HostPattern {
  const trimmed = text.trim().toLowerCase();
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+|\*))?$/.exec(trimmed);
  if (!match) return { name: trimmed, port: null };
  const port = match[2];
  return { name: match[1] as string, port: port === undefined || port === "*" ? null : port };
}

/**
 * Who may talk to the demo, from its config vars: the `Host` every request must name
 * (`DEMO_ALLOWED_HOSTS`, a DNS-rebinding guard), the `Origin` a browser's mutating request may come
 * from (its own origin, or one of `DEMO_ALLOWED_ORIGINS`), and whether the `/debug/*` routes exist
 * (`DEMO_DEBUG=on`). It is not authentication: see the README's "Tenancy and access".
 */
export class RequestPolicy {
  readonly #hosts: HostPattern[];
  readonly #origins: Set<string>;
  /** True when `/debug/*` answers; off unless the dev config sets `DEMO_DEBUG=on`. */
  readonly debug: boolean;

  constructor(env: Env) {
    this.#hosts = (env.DEMO_ALLOWED_HOSTS ?? LOOPBACK_HOSTS)
      .split(",")
      .filter((item) => item.trim() !== "")
      .map(parseHost);
    this.#origins = new Set(
      (env.DEMO_ALLOWED_ORIGINS ?? "")
        .split(",")
        .map((item) => item.trim().toLowerCase())
        .filter((item) => item !== ""),
    );
    this.debug = env.DEMO_DEBUG === "on";
  }

  /**
   * The origins besides the server's own whose pages may use the demo (`DEMO_ALLOWED_ORIGINS`),
   * those written as exact origins (`scheme://host[:port]`; another entry can never match).
   */
  get origins(): string[] {
    return [...this.#origins].filter(
      (origin) => URL.canParse(origin) && new URL(origin).origin === origin,
    );
  }

  // ── Checks ────────────────────────────────────────────────────────────────

  /**
   * The coded refusal for a request this policy turns away, or null to serve it:
   * `demo/forbidden-host` (421) for a `Host` outside the allow-list; `demo/forbidden-origin` (403)
   * for a mutating request whose `Origin` is neither its own nor allowed (protocol routes under
   * `/v1/stream` keep the Durable Streams CORS rules and skip the Origin check).
   */
  refusal(request: Request, { checkOrigin }: { checkOrigin: boolean }): Response | null {
    const url = new URL(request.url);
    const host = request.headers.get("host") ?? url.host;
    if (!this.#allowsHost(host)) {
      return errorResponse(
        421,
        "demo/forbidden-host",
        `This server does not answer for host "${host}".`,
      );
    }
    if (!checkOrigin || !MUTATING.has(request.method)) return null;
    const origin = request.headers.get("origin");
    // No Origin: not a browser's cross-site request (curl, server code).
    if (origin === null) return null;
    const own = `${url.protocol}//${host}`.toLowerCase();
    if (origin.toLowerCase() === own || this.#origins.has(origin.toLowerCase())) return null;
    return errorResponse(
      403,
      "demo/forbidden-origin",
      `Requests from origin "${origin}" may not change this server; add it to DEMO_ALLOWED_ORIGINS.`,
    );
  }

  #allowsHost(host: string): boolean {
    const asked = parseHost(host);
    return this.#hosts.some(
      (allowed) =>
        allowed.name === asked.name && (allowed.port === null || allowed.port === asked.port),
    );
  }
}
