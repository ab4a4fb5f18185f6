import { env } from "cloudflare:workers";
import { expect } from "vitest";

/** Where the tests' streams live (every test object answers any host). */
export const BASE = "https://streams.test/v1/stream";
export const hub = () => env.HUB.getByName("hub");
export const receiver = (name: string) => env.RECEIVER.getByName(name);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A request to the hub's control API, and its JSON answer. */
export async function control(
  path: string,
  init: { method?: string; body?: unknown; token?: string; raw?: string } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  const response = await hub().fetch(`${BASE}/__ds/${path}`, {
    method: init.method ?? "GET",
    headers,
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = text === "" ? {} : JSON.parse(text);
  } catch {
    body = { text };
  }
  return { status: response.status, body };
}

/** Creates a JSON stream (if missing) in its own object. */
export async function createStream(path: string): Promise<void> {
  const stub = env.SUB_STREAM.getByName(path);
  const url = `${BASE}/${path}`;
  const head = await stub.fetch(url, { method: "HEAD" });
  if (head.status === 404) {
    const put = await stub.fetch(url, {
      method: "PUT",
      headers: { "content-type": "application/json" },
    });
    expect(put.status).toBe(201);
  }
}

/** Appends JSON messages to a stream (created on first use) through its own object. */
export async function append(path: string, ...messages: unknown[]): Promise<void> {
  await createStream(path);
  const post = await env.SUB_STREAM.getByName(path).fetch(`${BASE}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(messages),
  });
  expect(post.status).toBeLessThan(300);
}

/** Reads a JSON stream's messages from the start. */
export async function readAll(path: string): Promise<unknown[]> {
  const response = await env.SUB_STREAM.getByName(path).fetch(`${BASE}/${path}?offset=-1`);
  return (await response.json()) as unknown[];
}

/** Polls `read` until `done` holds (5 s). */
export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  ms = 5_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

/** A webhook subscription's PUT to the tests' receiver object `to`. */
export const webhook = (id: string, streams: string[], to = id) => ({
  method: "PUT",
  body: {
    type: "webhook",
    streams,
    webhook: { url: `https://receiver.test/${to}` },
    lease_ttl_ms: 1000,
  },
});

/** The protocol offset of a seq. */
export const offset = (seq: number) => `${String(seq).padStart(16, "0")}_${"0".repeat(16)}`;
