/** Longest webhook URL accepted. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Why a webhook URL is refused, or null when it is accepted. `https` to a public host, or `http` to
 * `localhost` and `127.x.x.x` (a receiver on the developer's machine). Refused: other schemes,
 * credentials in the URL, IPv6 literals, and IPv4 literals in private, loopback (over https),
 * link-local, shared (100.64/10) or unspecified ranges — the addresses a webhook could use to reach
 * inside the network that runs the server.
 */
export function webhookUrlProblem(raw: string): string | null {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    return `webhook.url is at most ${MAX_WEBHOOK_URL_LENGTH} characters.`;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "webhook.url must be an absolute URL.";
  }
  if (url.username !== "" || url.password !== "") {
    return "webhook.url must not carry credentials.";
  }
  const host = url.hostname.toLowerCase();
  if (url.protocol === "http:") {
    return host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
      ? null
      : "http webhook URLs are allowed only for localhost and 127.x.x.x; use https.";
  }
  if (url.protocol !== "https:") return "webhook.url must use https.";
  if (host === "localhost") return "A localhost webhook uses http.";
  if (host.startsWith("[")) return "webhook.url must not be an IPv6 address.";
  const octets = ipv4Octets(host);
  if (octets !== null && isInternalIpv4(octets)) {
    return "webhook.url must not target a private, loopback or link-local address.";
  }
  return null;
}

/** The four octets of a dotted IPv4 literal, or null for a host name. */
function ipv4Octets(host: string): number[] | null {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) return null;
  const octets = host.split(".").map(Number);
  return octets.every((octet) => octet <= 255) ? octets : null;
}

function isInternalIpv4([a = 0, b = 0]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168)
  );
}
