import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProtocolStream } from "../src/protocol-stream";
import type { Workspace } from "../src/workspace";

const base = "http://demo";

function stream(id: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(`${base}/v1/stream/${id}`, init);
}

describe("Durable Streams protocol routes (/v1/stream/*)", () => {
  it("keeps each stream path in its own object and forks across objects", async () => {
    const id = crypto.randomUUID();
    const [src, fork] = [`route-src-${id}`, `route-fork-${id}`];
    expect(
      (await stream(src, { method: "PUT", headers: { "Content-Type": "text/plain" }, body: "ab" }))
        .status,
    ).toBe(201);
    expect(
      (await stream(src, { method: "POST", headers: { "Content-Type": "text/plain" }, body: "cd" }))
        .status,
    ).toBe(204);
    const forked = await stream(fork, {
      method: "PUT",
      headers: { "Stream-Forked-From": `/v1/stream/${src}` },
    });
    expect(forked.status).toBe(201);
    expect(await (await stream(fork)).text()).toBe("abcd");

    // The source's chunks live in the source's object only; the fork's object holds its copy.
    const chunksIn = (name: string) =>
      runInDurableObject(
        env.PROTOCOL_STREAMS.getByName(name),
        (instance: ProtocolStream) => instance.streams.status(name)?.cursor ?? null,
      );
    expect(await chunksIn(src)).toBe(2);
    expect(await chunksIn(fork)).toBe(2);
    expect(
      await runInDurableObject(env.PROTOCOL_STREAMS.getByName(src), (instance: ProtocolStream) =>
        instance.streams.status(fork),
      ),
    ).toBeNull();

    expect((await stream(src, { method: "DELETE" })).status).toBe(204);
    expect((await stream(src, { method: "HEAD" })).status).toBe(410);
    expect((await stream(fork, { method: "DELETE" })).status).toBe(204);
    expect((await stream(src, { method: "HEAD" })).status).toBe(404);
  });

  it("expires a fork through its object's alarm, which gives the source reference back", async () => {
    const id = crypto.randomUUID();
    const [src, fork] = [`ttl-src-${id}`, `ttl-fork-${id}`];
    await stream(src, { method: "PUT", headers: { "Content-Type": "text/plain" }, body: "x" });
    await stream(fork, {
      method: "PUT",
      headers: { "Stream-Forked-From": `/v1/stream/${src}`, "Stream-TTL": "1" },
    });
    await stream(src, { method: "DELETE" });
    expect((await stream(src, { method: "HEAD" })).status).toBe(410);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    // Nothing touches the fork's path: its alarm (already fired, or run now) expires it and
    // releases the source, which the source's own requests then see.
    await runDurableObjectAlarm(env.PROTOCOL_STREAMS.getByName(fork));
    let status = 0;
    for (let i = 0; i < 50 && status !== 404; i++) {
      status = (await stream(src, { method: "HEAD" })).status;
      if (status !== 404) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(404);
    expect((await stream(fork, { method: "HEAD" })).status).toBe(404);
  });

  it("answers CORS preflights and names an empty stream path as not found", async () => {
    const preflight = await stream("any", {
      method: "OPTIONS",
      headers: { Origin: "https://example.com", "Access-Control-Request-Method": "GET" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-headers")).toContain("If-None-Match");
    expect((await exports.default.fetch(`${base}/v1/stream/`)).status).toBe(404);
  });
});

describe("GET /streams/:id/sse", () => {
  it("serves a workspace stream as SSE from Last-Event-ID + 1, and 404s a missing one", async () => {
    const id = `sse-route-${crypto.randomUUID()}`;
    await runInDurableObject(env.WORKSPACE.getByName("default"), (instance: Workspace) => {
      const writer = instance.streams.open(id);
      for (let i = 0; i < 4; i++) writer.append({ i });
      writer.close();
    });
    const response = await exports.default.fetch(`${base}/streams/${id}/sse`, {
      headers: { "Last-Event-ID": "1" },
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await response.text()).toBe(
      'id: 2\ndata: {"i":2}\n\nid: 3\ndata: {"i":3}\n\nevent: up-to-date\ndata: {}\n\nevent: done\ndata: {}\n\n',
    );
    const missing = await exports.default.fetch(`${base}/streams/nope-${id}/sse`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      error: {
        code: "demo/stream-not-found",
        message: `No stream "nope-${id}" exists (waited 300 ms for it to be created); start a run that writes it, e.g. POST /tasks/demo.count@v1 with { "input": { "steps": 5, "stream": "nope-${id}" } }.`,
      },
    });
  });
});
