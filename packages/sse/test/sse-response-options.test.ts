import { describe, expect, it } from "vitest";
import { sseResponse } from "../src/index";
import { bodyText, inFixture, sleep } from "./helpers";

const UP_TO_DATE = "event: up-to-date\ndata: {}\n\n";
const DONE = "event: done\ndata: {}\n\n";

function get(headers: Record<string, string> = {}, signal?: AbortSignal): Request {
  return new Request("https://demo.test/streams/s/sse", { headers, ...(signal ? { signal } : {}) });
}

describe("sseResponse waitForStreamMs", () => {
  it("serves a stream created while the subscriber waits, from its first chunk", async () => {
    await inFixture(async ({ streams }) => {
      const pending = sseResponse(streams, "late", { heartbeatMs: 0, waitForStreamMs: 5_000 });
      expect(pending).toBeInstanceOf(Promise);
      await sleep(250);
      const writer = streams.open("late");
      writer.append({ i: 0 });
      writer.append({ i: 1 });
      writer.close();
      const response = await pending;
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      expect(await bodyText(response)).toBe(
        `id: 0\ndata: {"i":0}\n\nid: 1\ndata: {"i":1}\n\n${UP_TO_DATE}${DONE}`,
      );
    });
  });

  it("answers the 404 once the wait has passed without the stream", async () => {
    await inFixture(async ({ streams }) => {
      const started = Date.now();
      const response = await sseResponse(streams, "never", { waitForStreamMs: 400 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('Stream "never" does not exist');
    });
  });

  it("ends the wait as soon as the request's signal aborts", async () => {
    await inFixture(async ({ streams }) => {
      const disconnect = new AbortController();
      const started = Date.now();
      const pending = sseResponse(streams, "never", {
        request: get({}, disconnect.signal),
        waitForStreamMs: 30_000,
      });
      await sleep(50);
      disconnect.abort();
      const response = await pending;
      expect(response.status).toBe(404);
      expect(Date.now() - started).toBeLessThan(1_000);
    });
  });

  it("answers an existing stream at once, and a malformed id with the 400, as promises", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s").close({ chunks: ["x"] });
      const started = Date.now();
      const response = await sseResponse(streams, "s", { heartbeatMs: 0, waitForStreamMs: 10_000 });
      expect(await bodyText(response)).toBe(`id: 0\ndata: "x"\n\n${UP_TO_DATE}${DONE}`);
      const bad = await sseResponse(streams, "", { waitForStreamMs: 10_000 });
      expect(bad.status).toBe(400);
      expect(Date.now() - started).toBeLessThan(1_000);
    });
  });

  it("keeps answering a missing stream's 404 at once, as a Response, without the option", async () => {
    await inFixture(async ({ streams }) => {
      const response = sseResponse(streams, "nope");
      expect(response).toBeInstanceOf(Response);
      expect(response.status).toBe(404);
    });
  });
});

describe("sseResponse cors", () => {
  it('lets any origin read every answer with origin "*"', async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s").close({ chunks: [1] });
      const cors = { origin: "*" } as const;
      const request = get({ Origin: "https://elsewhere.example" });
      for (const response of [
        sseResponse(streams, "s", { request, cors, heartbeatMs: 0 }),
        sseResponse(streams, "missing", { request, cors }),
        sseResponse(streams, "", { request, cors }),
      ]) {
        expect(response.headers.get("access-control-allow-origin")).toBe("*");
        await response.body?.cancel();
      }
    });
  });

  it("echoes a listed Origin with Vary: Origin and leaves other origins without access", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s").close({ chunks: [1] });
      const cors = { origin: ["https://app.example", "http://localhost:5173"] };
      const listed = sseResponse(streams, "s", {
        request: get({ Origin: "http://localhost:5173" }),
        cors,
        heartbeatMs: 0,
      });
      expect(listed.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
      expect(listed.headers.get("vary")).toBe("Origin");
      expect(await bodyText(listed)).toBe(`id: 0\ndata: 1\n\n${UP_TO_DATE}${DONE}`);

      const missing = await sseResponse(streams, "missing", {
        request: get({ Origin: "https://app.example" }),
        cors,
        waitForStreamMs: 0,
      });
      expect(missing.status).toBe(404);
      expect(missing.headers.get("access-control-allow-origin")).toBe("https://app.example");

      for (const request of [get({ Origin: "https://evil.example" }), get()]) {
        const other = sseResponse(streams, "s", { request, cors, heartbeatMs: 0 });
        expect(other.headers.get("access-control-allow-origin")).toBeNull();
        expect(other.headers.get("vary")).toBe("Origin");
        await other.body?.cancel();
      }
    });
  });

  it("adds no CORS header without the option", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s").close();
      const response = sseResponse(streams, "s", {
        request: get({ Origin: "https://app.example" }),
        heartbeatMs: 0,
      });
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(response.headers.get("vary")).toBeNull();
      await response.body?.cancel();
    });
  });
});
