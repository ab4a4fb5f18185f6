import { formatOffset } from "@durablekit/sse";
import type { Env } from "./env";

/** The demo's feed subscription: every `feed/*` stream's appends start `demo.feed@v1` runs. */
export const FEED_SUBSCRIPTION = "demo.feed";

/** The streams it follows. */
export const FEED_PATTERN = "feed/*";

/**
 * Where its webhooks go: a host the demo's hub routes to the workspace object's receiver, so no
 * notification leaves the Worker.
 */
export const FEED_WEBHOOK_URL = "https://workspace.internal/feeds";

/** Most messages one page of a feed read asks for (the protocol handler's read bound applies too). */
const MAX_PAGES = 1_000;

/**
 * The JSON messages of protocol stream `source` from seq `from` up to (not including) seq `to`,
 * read from the stream's own object a page at a time.
 * @throws when the stream does not answer, or holds fewer messages than `to`.
 */
export async function readFeed(
  env: Env,
  source: string,
  from: number,
  to: number,
): Promise<unknown[]> {
  const stream = env.PROTOCOL_STREAMS.getByName(source);
  const messages: unknown[] = [];
  let seq = from;
  for (let page = 0; seq < to && page < MAX_PAGES; page++) {
    const path = source.split("/").map(encodeURIComponent).join("/");
    const response = await stream.fetch(
      `https://workspace.internal/v1/stream/${path}?offset=${formatOffset(seq)}`,
    );
    if (!response.ok) throw new Error(`Reading ${source} at ${seq} answered ${response.status}.`);
    const batch = (await response.json()) as unknown[];
    if (batch.length === 0) break;
    messages.push(...batch.slice(0, to - seq));
    seq += batch.length;
  }
  if (messages.length !== to - from) {
    throw new Error(
      `${source} holds ${messages.length} of the ${to - from} messages after ${from}.`,
    );
  }
  return messages;
}
