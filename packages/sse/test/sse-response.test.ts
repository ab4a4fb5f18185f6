import { Streams } from "@durablekit/streams";
import { anotherInstance, BAD_NAMES } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isSseError, resumeFrom, sseResponse } from "../src/index";
import { bodyText, inFixture, readChunks, sleep } from "./helpers";

const UP_TO_DATE = "event: up-to-date\ndata: {}\n\n";
const DONE = "event: done\ndata: {}\n\n";

function get(url: string, headers?: Record<string, string>): Request {
  return new Request(url, headers === undefined ? undefined : { headers });
}

describe("sseResponse", () => {
  it("frames a settled stream byte for byte: id and one data line per chunk, up-to-date, done", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      writer.append({ token: "Hel" });
      writer.append({ token: "lo\nthere" });
      writer.append(null);
      writer.close();
      const response = sseResponse(streams, "s", { heartbeatMs: 0 });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(await bodyText(response)).toBe(
        'id: 0\ndata: {"token":"Hel"}\n\n' +
          'id: 1\ndata: {"token":"lo\\nthere"}\n\n' +
          "id: 2\ndata: null\n\n" +
          UP_TO_DATE +
          DONE,
      );
    });
  });

  it("carries text chunks as JSON strings and binary chunks as base64 JSON strings", async () => {
    await inFixture(async ({ streams }) => {
      const text = streams.open("t", { contentType: "text/plain" });
      text.append("line one\nline two");
      text.close();
      expect(await bodyText(sseResponse(streams, "t", { heartbeatMs: 0 }))).toBe(
        `id: 0\ndata: "line one\\nline two"\n\n${UP_TO_DATE}${DONE}`,
      );
      const bytes = streams.open("b", { contentType: "application/octet-stream" });
      bytes.append(new Uint8Array([0, 255, 10, 13]));
      bytes.close();
      expect(await bodyText(sseResponse(streams, "b", { heartbeatMs: 0 }))).toBe(
        `id: 0\ndata: "AP8KDQ=="\n\n${UP_TO_DATE}${DONE}`,
      );
    });
  });

  it("resumes in order: explicit from, then Last-Event-ID + 1, then ?from=N, else 0", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      for (let i = 0; i < 5; i++) writer.append(i);
      writer.close();
      const ids = async (response: Response) =>
        [...(await bodyText(response)).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      const base = "https://demo.test/streams/s/sse";
      const read = (request: Request, from?: number) =>
        ids(
          sseResponse(streams, "s", {
            request,
            heartbeatMs: 0,
            ...(from === undefined ? {} : { from }),
          }),
        );

      // No header: a fresh EventSource must get chunk 0 (an absent header is not "0").
      expect(await read(get(base))).toEqual([0, 1, 2, 3, 4]);
      expect(await read(get(base, { "Last-Event-ID": "" }))).toEqual([0, 1, 2, 3, 4]);
      expect(await read(get(base, { "Last-Event-ID": "2" }))).toEqual([3, 4]);
      expect(await read(get(base, { "Last-Event-ID": "0" }))).toEqual([1, 2, 3, 4]);
      expect(await read(get(base, { "Last-Event-ID": "-1" }))).toEqual([0, 1, 2, 3, 4]);
      expect(await read(get(base, { "Last-Event-ID": "x7" }))).toEqual([0, 1, 2, 3, 4]);
      expect(await read(get(`${base}?from=2`))).toEqual([2, 3, 4]);
      expect(await read(get(`${base}?from=abc`))).toEqual([0, 1, 2, 3, 4]);
      expect(await read(get(`${base}?from=-3`))).toEqual([0, 1, 2, 3, 4]);
      // The header wins over the query, an explicit `from` over both.
      expect(await read(get(`${base}?from=1`, { "Last-Event-ID": "3" }))).toEqual([4]);
      expect(await read(get(`${base}?from=1`, { "Last-Event-ID": "3" }), 0)).toEqual([
        0, 1, 2, 3, 4,
      ]);
      expect(resumeFrom({ from: -4.5 })).toBe(0);
    });
  });

  it("reports up-to-date once when the replay reaches the tail, before live chunks and done", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      writer.append("a");
      const response = sseResponse(streams, "s", { heartbeatMs: 0 });
      const reading = bodyText(response);
      await sleep(20);
      writer.append("b");
      await sleep(20);
      writer.append("c");
      writer.close();
      const text = await reading;
      expect(text).toBe(
        `id: 0\ndata: "a"\n\n${UP_TO_DATE}id: 1\ndata: "b"\n\nid: 2\ndata: "c"\n\n${DONE}`,
      );
      expect(text.split("event: up-to-date").length - 1).toBe(1);
    });
  });

  it("ends an errored stream with its chunks and an error event carrying the reason", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      writer.append(1);
      writer.error("provider hung up");
      expect(await bodyText(sseResponse(streams, "s", { heartbeatMs: 0 }))).toBe(
        `id: 0\ndata: 1\n\n${UP_TO_DATE}event: error\ndata: {"reason":"provider hung up"}\n\n`,
      );
      streams.open("quiet").error();
      expect(await bodyText(sseResponse(streams, "quiet", { heartbeatMs: 0 }))).toBe(
        `${UP_TO_DATE}event: error\ndata: {"reason":null}\n\n`,
      );
    });
  });

  it("ends with an error event saying deleted, not done, when the stream is deleted under a reader", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s").append("a");
      const reading = bodyText(sseResponse(streams, "s", { heartbeatMs: 0 }));
      await sleep(20);
      expect(streams.delete("s", { force: true })).toBe(true);
      expect(await reading).toBe(
        `id: 0\ndata: "a"\n\n${UP_TO_DATE}event: error\ndata: {"reason":"deleted","gone":true}\n\n`,
      );
    });
  });

  it("ends with an error event saying expired, not done, when the stream expires under a reader", async () => {
    await inFixture(async (_fixture, state) => {
      let offset = 0;
      const streams = new Streams(anotherInstance(state), { now: () => Date.now() + offset });
      streams.open("s", { ttlMs: 1000 }).append("a");
      const reading = bodyText(sseResponse(streams, "s", { heartbeatMs: 0 }));
      await sleep(20);
      offset += 1001;
      await streams.alarm();
      expect(await reading).toBe(
        `id: 0\ndata: "a"\n\n${UP_TO_DATE}event: error\ndata: {"reason":"expired","gone":true}\n\n`,
      );
    });
  });

  it("restarts from the beginning for a Last-Event-ID beyond the cursor, as after a delete and reopen under the same id", async () => {
    await inFixture(async ({ streams }) => {
      const old = streams.open("s", { contentType: "text/plain" });
      for (const text of ["a", "b", "c", "d"]) old.append(text);
      streams.delete("s", { force: true });
      const fresh = streams.open("s", { contentType: "text/plain" });
      fresh.append("new 0");
      fresh.append("new 1");
      fresh.close();
      const url = "https://example.com/s";
      // The reconnecting EventSource last saw id 3 of the deleted stream: all of the new one comes.
      expect(
        await bodyText(
          sseResponse(streams, "s", {
            heartbeatMs: 0,
            request: get(url, { "Last-Event-ID": "3" }),
          }),
        ),
      ).toBe(`id: 0\ndata: "new 0"\n\nid: 1\ndata: "new 1"\n\n${UP_TO_DATE}${DONE}`);
      // At the cursor (2) and beyond: nothing of this stream has that id either.
      for (const id of ["2", "99"]) {
        const text = await bodyText(
          sseResponse(streams, "s", { heartbeatMs: 0, request: get(url, { "Last-Event-ID": id }) }),
        );
        expect(text.startsWith('id: 0\ndata: "new 0"\n\n')).toBe(true);
      }
      // The last event of this stream resumes at the tail, as before.
      expect(
        await bodyText(
          sseResponse(streams, "s", {
            heartbeatMs: 0,
            request: get(url, { "Last-Event-ID": "1" }),
          }),
        ),
      ).toBe(`${UP_TO_DATE}${DONE}`);
    });
  });

  it("answers a coded 400 JSON, never a throw, for a stream id streams refuses", async () => {
    await inFixture(async ({ streams }) => {
      for (const name of BAD_NAMES) {
        const response = sseResponse(streams, name as string);
        expect(response.status).toBe(400);
        expect(response.headers.get("content-type")).toMatch(/^application\/json/);
        expect(await response.json()).toMatchObject({
          error: { code: "sse/invalid-argument", message: expect.stringContaining("stream id") },
        });
      }
    });
  });

  it("answers 404 with a short text body for a missing stream", async () => {
    await inFixture(async ({ streams }) => {
      const response = sseResponse(streams, "nope");
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('Stream "nope" does not exist');
    });
  });

  it("writes each replayed batch with one enqueue", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      for (let i = 0; i < 5; i++) writer.append(i);
      writer.close();
      const { chunks } = await readChunks(
        sseResponse(streams, "s", { heartbeatMs: 0, batchSize: 2 }),
      );
      expect(chunks.slice(0, 3)).toEqual([
        "id: 0\ndata: 0\n\nid: 1\ndata: 1\n\n",
        "id: 2\ndata: 2\n\nid: 3\ndata: 3\n\n",
        "id: 4\ndata: 4\n\n",
      ]);
    });
  });

  it("ends at once, with an empty body and no parked reader, for an already-aborted signal", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s").append("live, never settled");
      const fromRequest = new Request("https://demo.test/s", { signal: AbortSignal.abort() });
      for (const response of [
        sseResponse(streams, "s", { signal: AbortSignal.abort(), heartbeatMs: 0 }),
        sseResponse(streams, "s", { request: fromRequest, heartbeatMs: 0 }),
      ]) {
        expect(response.status).toBe(200);
        expect(await bodyText(response)).toBe("");
      }
      expect(streams.waitStats().readers).toBe(0);
    });
  });

  it("ends the tail quietly when the signal or the request's signal aborts, or the body is cancelled", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s").append("x");
      const controller = new AbortController();
      const aborted = sseResponse(streams, "s", { signal: controller.signal, heartbeatMs: 0 });
      const reading = bodyText(aborted);
      await sleep(20);
      expect(streams.waitStats().readers).toBe(1);
      controller.abort();
      expect(await reading).toBe(`id: 0\ndata: "x"\n\n${UP_TO_DATE}`);
      expect(streams.waitStats().readers).toBe(0);

      const disconnect = new AbortController();
      const request = new Request("https://demo.test/s", { signal: disconnect.signal });
      const fromRequest = bodyText(sseResponse(streams, "s", { request, heartbeatMs: 0 }));
      await sleep(20);
      expect(streams.waitStats().readers).toBe(1);
      disconnect.abort();
      expect(await fromRequest).toBe(`id: 0\ndata: "x"\n\n${UP_TO_DATE}`);
      expect(streams.waitStats().readers).toBe(0);

      const cancelled = sseResponse(streams, "s", { heartbeatMs: 0 });
      const { reader } = await readChunks(cancelled, (text) => text.includes("up-to-date"));
      await sleep(10);
      expect(streams.waitStats().readers).toBe(1);
      await reader.cancel();
      await sleep(10);
      expect(streams.waitStats().readers).toBe(0);
    });
  });

  it("sends heartbeat comments while tailing, and a heartbeat racing a disconnect never throws", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s");
      const response = sseResponse(streams, "s", { heartbeatMs: 5 });
      const { text, reader } = await readChunks(
        response,
        (seen) => seen.split(": heartbeat\n\n").length > 3,
      );
      expect(text.startsWith(UP_TO_DATE)).toBe(true);
      expect(text.slice(UP_TO_DATE.length)).toMatch(/^(: heartbeat\n\n)+$/);
      // Cancel between heartbeats, and let several more intervals fire against the closed body.
      await reader.cancel();
      await sleep(40);
      expect(streams.waitStats().readers).toBe(0);
    });
  });

  it("refuses malformed options with a coded error", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s");
      for (const options of [{ heartbeatMs: -1 }, { batchSize: 0 }, { from: Number.NaN }]) {
        let caught: unknown;
        try {
          sseResponse(streams, "s", options);
        } catch (error) {
          caught = error;
        }
        expect(isSseError(caught, "sse/invalid-argument")).toBe(true);
      }
    });
  });
});
