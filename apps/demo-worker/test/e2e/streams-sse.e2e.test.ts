import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { EventSource, type FetchLike } from "eventsource";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "./poll.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

/** Starts a demo.count@v1 run that appends `{ i }` to `stream` every `stepMs`, and waits for the stream to exist. */
async function produce(dev: WranglerDev, stream: string, steps: number, stepMs: number) {
  const response = await fetch(`${dev.url}/tasks/demo.count@v1`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ input: { steps, stepMs, stream } }),
  });
  expect(response.status).toBe(202);
  await poll(
    async () => ((await fetch(`${dev.url}/debug/streams/${stream}`)).ok ? true : undefined),
    30_000,
    "the stream to be opened",
  );
}

/**
 * A response whose body delivers exactly the first `events` SSE events and then fails, as a
 * dropped connection would; the real connection to the server is cancelled at the same moment.
 */
function cutAfter(response: Response, events: number): Response {
  const upstream = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let seen = "";
  let forwarded = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await upstream.read();
      if (done) return controller.close();
      seen += decoder.decode(value, { stream: true });
      // The end of the `events`-th chunk frame (a frame with an id), if it has arrived.
      const frames = [...seen.matchAll(/id: \d+\ndata: [^\n]*\n\n/g)];
      const last = frames[events - 1];
      const end = last === undefined ? seen.length : (last.index ?? 0) + last[0].length;
      if (end > forwarded) controller.enqueue(encoder.encode(seen.slice(forwarded, end)));
      forwarded = end;
      if (last === undefined) return;
      await upstream.cancel();
      controller.error(new TypeError("connection cut by the test"));
    },
    cancel: () => upstream.cancel(),
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

describe("GET /streams/:id/sse with a real reconnecting EventSource under wrangler dev", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir, vars: { DEMO_DEBUG: "on" } });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("delivers every chunk exactly once, in order, across a connection cut mid-stream", async () => {
    const stream = `sse-cut-${Date.now()}`;
    const steps = 16;
    await produce(dev, stream, steps, 250);

    const lastEventIds: Array<string | null> = [];
    const cutting: FetchLike = async (input, init) => {
      const headers = new Headers(init?.headers);
      lastEventIds.push(headers.get("last-event-id"));
      const response = await fetch(input, init);
      return lastEventIds.length === 1 ? cutAfter(response, 3) : response;
    };
    const source = new EventSource(`${dev.url}/streams/${stream}/sse`, { fetch: cutting });
    const received: Array<{ id: string; i: number }> = [];
    source.addEventListener("message", (event) => {
      received.push({ id: event.lastEventId, i: (JSON.parse(event.data) as { i: number }).i });
    });
    try {
      await poll(async () => (received.length >= steps ? true : undefined), 60_000, "every chunk");
      // Nothing more arrives: no chunk is delivered twice.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      source.close();
    }

    const expected = Array.from({ length: steps }, (_, i) => i);
    expect(received.map((event) => event.i)).toEqual(expected);
    expect(received.map((event) => Number(event.id))).toEqual(expected);
    // The first connection had no Last-Event-ID; the reconnect resumed after the last event seen.
    expect(lastEventIds[0]).toBeNull();
    expect(lastEventIds[1]).toBe("2");
  });

  it("resumes with Last-Event-ID after wrangler dev is SIGKILLed and restarted mid-stream", async () => {
    const stream = `sse-kill-${Date.now()}`;
    const steps = 14;
    await produce(dev, stream, steps, 300);

    // While the server is down a fetch fails, or answers a non-200 while it starts: either way the
    // client treats it as a network error and retries, as a browser would on a dropped connection.
    const resumedFrom: Array<string | null> = [];
    const resilient: FetchLike = async (input, init) => {
      resumedFrom.push(new Headers(init?.headers).get("last-event-id"));
      const response = await fetch(input, init);
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new TypeError(`server not ready (${response.status})`);
      }
      return response;
    };
    const source = new EventSource(`${dev.url}/streams/${stream}/sse`, { fetch: resilient });
    const received: number[] = [];
    const ids: string[] = [];
    let atKill = 0;
    source.addEventListener("message", (event) => {
      ids.push(event.lastEventId);
      received.push((JSON.parse(event.data) as { i: number }).i);
    });
    try {
      await poll(async () => (received.length >= 3 ? true : undefined), 30_000, "the first chunks");
      await dev.kill();
      atKill = received.length;
      dev = await dev.restart();
      // The run resumes from its journal through the alarm (claim timeout 3 s); the client reconnects.
      await poll(async () => (received.length >= steps ? true : undefined), 90_000, "every chunk");
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      source.close();
    }
    const expected = Array.from({ length: steps }, (_, i) => i);
    expect(received).toEqual(expected);
    expect(ids.map(Number)).toEqual(expected);
    // Killed mid-stream, and the successful reconnect resumed after the last event seen before it.
    expect(atKill).toBeLessThan(steps);
    expect(resumedFrom[0]).toBeNull();
    expect(resumedFrom.slice(1)).toContain(String(atKill - 1));
  });
});
