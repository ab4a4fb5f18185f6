import { anotherInstance, countingState } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isStreamsError, Streams } from "../src/index";
import { chunkRows, collect, inFixture } from "./helpers";

describe("appending", () => {
  it("appends durable chunks with a gapless monotonic cursor and settles once", async () => {
    await inFixture(({ streams }, state) => {
      const writer = streams.open("s");
      expect(writer.created).toBe(true);
      expect(writer.cursor).toBe(0);
      expect([writer.append({ n: 0 }), writer.append({ n: 1 }), writer.append({ n: 2 })]).toEqual([
        0, 1, 2,
      ]);
      expect(writer.cursor).toBe(3);
      expect(streams.status("s")).toMatchObject({ state: "streaming", cursor: 3 });
      expect(chunkRows(state, "s").map((row) => row.seq)).toEqual([0, 1, 2]);

      const closed = writer.close();
      expect(closed).toMatchObject({ settled: true, state: "completed", cursor: 3 });
      const status = streams.status("s");
      expect(status).toMatchObject({ state: "completed", cursor: 3 });
      expect(status?.closedAt).toBeTypeOf("number");

      // Settling again, either way, is a no-op: recovery code may repeat it.
      expect(writer.close()).toMatchObject({ settled: false, state: "completed" });
      expect(writer.error("late")).toMatchObject({ settled: false, state: "completed" });
      expect(streams.status("s")).toMatchObject({ state: "completed", cursor: 3 });
      expect(streams.status("s")?.error).toBeUndefined();
    });
  });

  it("writes exactly one SQLite row per append, counted from the cursors' rowsWritten", async () => {
    await inFixture((_fixture, state) => {
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state));
      const writer = streams.open("rows");
      const sized = streams.open("sized", { producer: { id: "p", epoch: 0 } });
      sized.append("first write registers the producer");
      for (let i = 0; i < 200; i++) {
        counting.reset();
        writer.append({ i, text: "x".repeat(100) });
        expect(counting.counts().rowsWritten).toBe(1);
        counting.reset();
        sized.append({ i });
        expect(counting.counts().rowsWritten).toBe(1);
      }
      // The cursor lives in the chunk log, not the stream row: a long stream costs the same per append.
      counting.reset();
      for (let i = 0; i < 1000; i++) writer.append({ i });
      expect(counting.counts().rowsWritten).toBe(1000);
      expect(writer.cursor).toBe(1200);
    });
  });

  it("recovers the cursor at open with an indexed read, not a scan", async () => {
    await inFixture((_fixture, state) => {
      const counting = countingState(state);
      const first = new Streams(anotherInstance(counting.state));
      const writer = first.open("long");
      writer.appendMany(Array.from({ length: 2000 }, (_, i) => ({ i })));

      // A second instance has nothing cached, like a restarted object.
      const second = new Streams(anotherInstance(counting.state));
      second.status("warm-up");
      counting.reset();
      const reopened = second.open("long");
      expect(reopened.cursor).toBe(2000);
      expect(counting.counts().rowsRead).toBeLessThanOrEqual(4);
      expect(reopened.append({ i: 2000 })).toBe(2000);
    });
  });

  it("keeps the log gapless even against raw SQL: rows off the tail or on a settled stream are skipped", async () => {
    await inFixture(({ streams }, state) => {
      const writer = streams.open("s");
      writer.append("a");
      const key = state.storage.sql
        .exec<{ k: number }>("SELECT stream_key AS k FROM dk_streams_streams WHERE stream_id = 's'")
        .one().k;
      const insert = (seq: number) =>
        state.storage.sql.exec(
          "INSERT OR IGNORE INTO dk_streams_chunks (stream_key, seq, at, body) VALUES (?, ?, 0, '1')",
          key,
          seq,
        ).rowsWritten;
      expect(insert(5)).toBe(0); // a gap
      expect(insert(0)).toBe(0); // taken
      expect(insert(1)).toBe(1); // the tail
      writer.close();
      expect(insert(2)).toBe(0); // settled
      expect(chunkRows(state, "s").map((r) => r.seq)).toEqual([0, 1]);
    });
  });

  it("appends several chunks as one write, one row each", async () => {
    await inFixture((_fixture, state) => {
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state));
      const writer = streams.open("many");
      writer.append("a");
      counting.reset();
      const result = writer.appendMany(["b", "c", "d"]);
      expect(result).toMatchObject({ firstSeq: 1, lastSeq: 3, cursor: 4, duplicate: false });
      expect(counting.counts(0, (q) => q.includes("INSERT")).rowsWritten).toBe(3);
      expect(() => writer.appendMany([])).toThrowError(/needs at least one chunk/);
      expect(() => streams.write("many", [])).toThrowError(/needs at least one chunk/);
    });
  });

  it("stores JSON, text and binary chunks as the stream's content type says", async () => {
    await inFixture(async ({ streams }) => {
      const json = streams.open("json");
      json.append({ a: [1, "two", null, true] });
      json.append("a string is JSON too");
      json.close();

      const text = streams.open("text", { contentType: "text/plain; charset=utf-8" });
      text.append("line 1\nline 2");
      text.append(new TextEncoder().encode("bytes déjà"));
      text.close();

      const bytes = new Uint8Array(256).map((_, i) => i);
      const binary = streams.open("bin", { contentType: "application/octet-stream" });
      binary.append(bytes);
      binary.append("hé");
      binary.append(new Uint16Array([0xffff]));
      binary.close();

      expect((await collect(streams.read("json"))).map((c) => c.chunk)).toEqual([
        { a: [1, "two", null, true] },
        "a string is JSON too",
      ]);
      expect((await collect(streams.read("text"))).map((c) => c.chunk)).toEqual([
        "line 1\nline 2",
        "bytes déjà",
      ]);
      const read = (await collect(streams.read<Uint8Array>("bin"))).map((c) => c.chunk);
      expect(read[0]).toBeInstanceOf(Uint8Array);
      expect([...(read[0] as Uint8Array)]).toEqual([...bytes]);
      expect([...(read[1] as Uint8Array)]).toEqual([0x68, 0xc3, 0xa9]);
      expect([...(read[2] as Uint8Array)]).toEqual([0xff, 0xff]);

      expect(streams.status("json")).toMatchObject({
        contentType: "application/json",
        encoding: "json",
      });
      expect(streams.status("text")).toMatchObject({ encoding: "text" });
      expect(streams.status("bin")).toMatchObject({ encoding: "binary" });
      expect(
        streams
          .open("ndjson", { contentType: "application/x-ndjson", encoding: "text" })
          .append("{}\n"),
      ).toBe(0);
    });
  });

  // Regression: the body column once had numeric affinity, so "007" read back as the number 7.
  it("reads numeric-looking text and JSON chunks back exactly as appended", async () => {
    await inFixture(async ({ streams }) => {
      const texts = ["007", "1.50", "12345678901234567890", " 42", "1e3"];
      const text = streams.open("numeric-text", { contentType: "text/plain" });
      for (const chunk of texts) text.append(chunk);
      text.close();
      expect((await collect(streams.read("numeric-text"))).map((c) => c.chunk)).toEqual(texts);

      const json = streams.open("numeric-json");
      json.append(12345678901234567890n.toString());
      json.append(1.5);
      json.close();
      expect((await collect(streams.read("numeric-json"))).map((c) => c.chunk)).toEqual([
        "12345678901234567890",
        1.5,
      ]);
    });
  });

  it("refuses values the stream cannot store, naming the problem, and writes nothing", async () => {
    await inFixture(({ streams }) => {
      const json = streams.open("json");
      const text = streams.open("text", { contentType: "text/plain" });
      const binary = streams.open("bin", { contentType: "image/png" });
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const cases: [() => unknown, RegExp][] = [
        [() => json.append(undefined as never), /undefined, which has no JSON form/],
        [() => json.append((() => 1) as never), /a function, which has no JSON form/],
        [() => json.append({ a: { b: 1n } } as never), /chunk\.a\.b \(a BigInt\)/],
        [
          () => json.append({ list: [1, cyclic] } as never),
          /chunk\.list\[1\]\.self \(a circular reference\)/,
        ],
        [
          () => json.append(new Uint8Array([1])),
          /binary data; open the stream with a binary content type/,
        ],
        [() => text.append(42 as never), /must be a string/],
        [() => text.append(new Uint8Array([0xff, 0xfe])), /not valid UTF-8/],
        [() => binary.append({ a: 1 } as never), /must be a Uint8Array/],
      ];
      for (const [attempt, message] of cases) {
        let caught: unknown;
        try {
          attempt();
        } catch (error) {
          caught = error;
        }
        expect(isStreamsError(caught, "streams/unserializable"), String(message)).toBe(true);
        expect((caught as Error).message).toMatch(message);
      }
      expect(streams.status("json")?.cursor).toBe(0);
      expect(streams.status("text")?.cursor).toBe(0);
      expect(streams.status("bin")?.cursor).toBe(0);
    });
  });

  it("enforces the chunk size limit in stored bytes", async () => {
    await inFixture((_fixture, state) => {
      const streams = new Streams(anotherInstance(state), { maxChunkBytes: 1024 });
      const json = streams.open("json");
      expect(json.append("x".repeat(1022))).toBe(0); // 1,024 bytes with its quotes
      const tooBig = () => json.append("x".repeat(1023));
      expect(tooBig).toThrowError(/1025 bytes, over the 1024-byte limit/);
      try {
        tooBig();
      } catch (error) {
        expect(isStreamsError(error, "streams/too-large")).toBe(true);
      }
      // 600 characters, 1,200 UTF-8 bytes.
      expect(() => json.append("é".repeat(600))).toThrowError(/over the 1024-byte limit/);
      const binary = streams.open("bin", { contentType: "application/octet-stream" });
      expect(binary.append(new Uint8Array(1024))).toBe(0);
      expect(() => binary.append(new Uint8Array(1025))).toThrowError(/1025 bytes/);
      expect(json.cursor).toBe(1);
      expect(binary.cursor).toBe(1);
    });
  });

  it("commits final chunks and the settlement in one transaction", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("final");
      writer.append("a");
      const result = writer.close({ chunks: ["b", "c"] });
      expect(result).toMatchObject({ firstSeq: 1, lastSeq: 2, cursor: 3, settled: true });
      expect((await collect(streams.read("final"))).map((c) => c.chunk)).toEqual(["a", "b", "c"]);
      expect(() => writer.close({ chunks: ["late"] })).toThrowError(/already settled as completed/);
      expect(streams.status("final")?.cursor).toBe(3);
    });
  });
});
