import { describe, expect, it, vi } from "vitest";
import { DurableStreamsHandler, sseResponse } from "../src/index";
import { bodyText, inFixture, readChunks, sleep } from "./helpers";

const ORIGIN = "https://streams.test";
const json = { "Content-Type": "application/json" };
const text = { "Content-Type": "text/plain" };
const bytes = (value: string) => new TextEncoder().encode(value);

/** Reads an SSE body on until `until` matches everything read so far. */
async function readOn(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  until: (seen: string) => boolean,
): Promise<string> {
  const decoder = new TextDecoder();
  let seen = "";
  while (!until(seen)) {
    const { done, value } = await reader.read();
    if (done) break;
    seen += decoder.decode(value, { stream: true });
  }
  return seen;
}

describe("write limits", () => {
  it("refuses with 413 a JSON write of more than maxWriteMessages messages or a body over maxWriteBytes, storing nothing", async () => {
    await inFixture(async ({ streams }, state) => {
      const handler = new DurableStreamsHandler(state, {
        streams,
        maxWriteMessages: 3,
        maxWriteBytes: 64,
      });
      const at = (init: RequestInit, query = "") =>
        handler.fetch(new Request(`${ORIGIN}/v1/stream/j${query}`, init));
      expect((await at({ method: "PUT", headers: json, body: "[1,2,3,4]" })).status).toBe(413);
      expect(streams.status("j")).toBeNull();
      expect((await at({ method: "PUT", headers: json, body: "[1,2,3]" })).status).toBe(201);
      const tooMany = await at({ method: "POST", headers: json, body: "[4,5,6,7]" });
      expect(tooMany.status).toBe(413);
      expect(await bodyText(tooMany)).toContain("at most 3 messages");
      const tooLong = await at({ method: "POST", headers: json, body: `"${"x".repeat(64)}"` });
      expect(tooLong.status).toBe(413);
      expect((await at({ method: "POST", headers: json, body: "[4,5,6]" })).status).toBe(204);
      expect(await (await at({ method: "GET" }, "?offset=-1")).json()).toEqual([1, 2, 3, 4, 5, 6]);
    });
  });

  it("accepts 10,000 messages in one JSON append by default and refuses 10,001", async () => {
    await inFixture(async ({ protocol, streams }) => {
      const at = (init: RequestInit) => protocol.fetch(new Request(`${ORIGIN}/v1/stream/d`, init));
      await at({ method: "PUT", headers: json });
      const array = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => i));
      expect((await at({ method: "POST", headers: json, body: array(10_001) })).status).toBe(413);
      expect(streams.status("d")?.cursor).toBe(0);
      expect((await at({ method: "POST", headers: json, body: array(10_000) })).status).toBe(204);
      expect(streams.status("d")?.cursor).toBe(10_000);
    });
  });
});

describe("live SSE fan-out", () => {
  it("carries appends made behind a wake, within the same macrotask, in one data event", async () => {
    await inFixture(async ({ protocol, streams }) => {
      await protocol.fetch(new Request(`${ORIGIN}/v1/stream/c`, { method: "PUT", headers: text }));
      const response = await protocol.fetch(
        new Request(`${ORIGIN}/v1/stream/c?offset=-1&live=sse`),
      );
      const { reader } = await readChunks(response, (seen) => seen.includes("upToDate"));
      await sleep(20);
      for (const letter of ["a", "b", "c", "d", "e"]) {
        streams.write("c", [bytes(letter)]);
        // Microtasks only: the reader woken by the first append has not read yet.
        for (let hop = 0; hop < 20; hop++) await Promise.resolve();
      }
      const seen = await readOn(reader, (s) => s.includes('"0000000000000005_'));
      expect(seen.split("event: data").length - 1).toBe(1);
      expect(seen).toContain("event: data\ndata:abcde\n\n");
      await reader.cancel();
    });
  });

  it("answers every reader woken at the same offset with one shared read, each chunk once and in order", async () => {
    await inFixture(async ({ protocol, streams }) => {
      await protocol.fetch(new Request(`${ORIGIN}/v1/stream/f`, { method: "PUT", headers: text }));
      const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
      for (let i = 0; i < 10; i++) {
        const response = await protocol.fetch(
          new Request(`${ORIGIN}/v1/stream/f?offset=-1&live=sse`),
        );
        readers.push((await readChunks(response, (seen) => seen.includes("upToDate"))).reader);
      }
      await sleep(20);
      const pages = vi.spyOn(streams, "readPage");
      streams.write("f", [bytes("x")]);
      streams.write("f", [bytes("y")]);
      const seen = await Promise.all(
        readers.map((reader) => readOn(reader, (s) => s.includes('"0000000000000002_'))),
      );
      // One page read answers all ten readers (each would otherwise read for itself).
      expect(pages.mock.calls.length).toBe(1);
      pages.mockRestore();
      for (const events of seen) {
        expect(events).toMatch(
          /^event: data\ndata:xy\n\nevent: control\ndata:\{"streamNextOffset":"0000000000000002_0000000000000000","streamCursor":"\d+","upToDate":true\}\n\n$/,
        );
      }
      streams.write("f", [bytes("z")]);
      const more = await Promise.all(
        readers.map((reader) => readOn(reader, (s) => s.includes('"0000000000000003_'))),
      );
      for (const events of more) expect(events).toContain("event: data\ndata:z\n\n");
      for (const reader of readers) await reader.cancel();
      // Every reader left: no wait is left parked on the stream.
      await sleep(10);
      expect(streams.waitStats()).toEqual({ streams: 0, readers: 0 });
    });
  });
});

describe("sseResponse fan-out", () => {
  it("carries the appends made while a live batch was sent in one enqueue, each chunk once and in order", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      const response = sseResponse(streams, "s", { heartbeatMs: 0 });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      expect(decoder.decode((await reader.read()).value)).toBe("event: up-to-date\ndata: {}\n\n");
      await sleep(20);
      for (let i = 0; i < 5; i++) {
        writer.append(i);
        // Microtasks only: no macrotask passes between the appends.
        for (let hop = 0; hop < 20; hop++) await Promise.resolve();
      }
      writer.close();
      const enqueues: string[] = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        enqueues.push(decoder.decode(value));
      }
      expect(enqueues.join("")).toBe(
        "id: 0\ndata: 0\n\nid: 1\ndata: 1\n\nid: 2\ndata: 2\n\nid: 3\ndata: 3\n\nid: 4\ndata: 4\n\n" +
          "event: done\ndata: {}\n\n",
      );
      // The first append's wake reads at once; the rest wait one macrotask and come together.
      expect(enqueues.length).toBeLessThanOrEqual(3);
    });
  });
});
