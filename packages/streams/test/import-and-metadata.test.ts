import { runDurableObjectAlarm } from "cloudflare:test";
import { anotherInstance, countingState, thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isStreamsError, Streams } from "../src/index";
import { chunkRows, collect, freshStub, inFixture } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isStreamsError);

describe("settledTtlMs", () => {
  it("keeps a streaming stream for ttlMs and a settled one for settledTtlMs after it settled", async () => {
    const stub = freshStub("settled-ttl");
    await inFixture((fixture) => {
      // Seconds of margin: the fixture clock is real time plus an offset.
      const writer = fixture.streams.open("s", { ttlMs: 60_000, settledTtlMs: 10_000 });
      writer.append("a");
      expect(fixture.streams.status("s")).toMatchObject({ ttlMs: 60_000, settledTtlMs: 10_000 });
      fixture.clockOffset += 30_000; // past settledTtlMs, within ttlMs: a live stream stays
      expect(fixture.streams.status("s")).toMatchObject({ state: "streaming" });
      writer.close();
      expect(fixture.streams.status("s")?.expiresAt).toBe(
        (fixture.streams.status("s")?.closedAt as number) + 10_000,
      );
      fixture.clockOffset += 7_000;
    }, stub);
    // The sweep finds the settled stream not yet due and leaves it.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture((fixture) => {
      expect(fixture.streams.status("s")).toMatchObject({ state: "completed" });
      fixture.clockOffset += 4_000; // 11 s after settling, far inside the 60 s ttlMs
      expect(fixture.streams.status("s")).toBeNull();
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture(({ events }, state) => {
      expect(events.filter((e) => e.type === "stream:expired")).toEqual([
        { type: "stream:expired", streamId: "s" },
      ]);
      expect(state.storage.sql.exec("SELECT * FROM dk_streams_streams").toArray()).toEqual([]);
    }, stub);
  });

  it("applies settledTtlMs to a settled stream that has no ttlMs, and touch() extends it", async () => {
    await inFixture((fixture) => {
      const { streams } = fixture;
      const writer = streams.open("s", { settledTtlMs: 10_000 });
      writer.append("a");
      expect(streams.status("s")?.expiresAt).toBeUndefined();
      fixture.clockOffset += 3_600_000; // a live stream without ttlMs never expires
      writer.error("boom");
      const closedAt = streams.status("s")?.closedAt as number;
      expect(streams.status("s")).toMatchObject({ state: "errored", expiresAt: closedAt + 10_000 });
      fixture.clockOffset += 8_000;
      expect(streams.touch("s")).toBe(true);
      fixture.clockOffset += 8_000;
      expect(streams.status("s")).toMatchObject({ state: "errored" });
      fixture.clockOffset += 3_000;
      expect(streams.status("s")).toBeNull();
    });
  });

  it("refuses a reopen with another settledTtlMs and a malformed one", async () => {
    await inFixture(({ streams }) => {
      streams.open("s", { settledTtlMs: 1000 });
      expect(codeOf(() => streams.open("s", { settledTtlMs: 2000 }))).toBe("streams/conflict");
      expect(streams.open("s", { settledTtlMs: 1000 }).cursor).toBe(0);
      for (const bad of [0, -1, 1.5, "1000", Number.NaN]) {
        expect(codeOf(() => streams.open("t", { settledTtlMs: bad as number }))).toBe(
          "streams/invalid-argument",
        );
      }
    });
  });
});

describe("setMetadata", () => {
  it("replaces a settled stream's metadata in one row write without moving its expiry", async () => {
    await inFixture((_fixture, state) => {
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state));
      const writer = streams.open("s", { metadata: { turn: 1 }, settledTtlMs: 60_000 });
      writer.append("a");
      writer.close();
      const before = streams.status("s");
      counting.reset();
      expect(streams.setMetadata("s", { turn: 1, messageId: "m-1" })).toBe(true);
      // One stream row changed (the cursor's count includes no index: metadata is unindexed).
      expect(counting.counts().rowsWritten).toBe(1);
      const after = streams.status("s");
      expect(after?.metadata).toEqual({ turn: 1, messageId: "m-1" });
      expect(after?.expiresAt).toBe(before?.expiresAt);
      expect(after?.updatedAt).toBe(before?.updatedAt);
      expect(streams.setMetadata("s", null)).toBe(true);
      expect(streams.status("s")?.metadata).toBeUndefined();
    });
  });

  it("returns false for a stream that does not exist and refuses metadata that is not an object", async () => {
    await inFixture(({ streams }) => {
      expect(streams.setMetadata("missing", { a: 1 })).toBe(false);
      streams.open("s");
      for (const bad of [[1], "x", 3, undefined]) {
        expect(codeOf(() => streams.setMetadata("s", bad as never))).toBe(
          "streams/invalid-argument",
        );
      }
      expect(codeOf(() => streams.setMetadata("", {}))).toBe("streams/invalid-argument");
    });
  });
});

describe("importStream", () => {
  it("imports an in-flight stream with its chunks, times and cursor, and open() continues it", async () => {
    await inFixture(async (fixture, state) => {
      const { streams } = fixture;
      const t0 = Date.now() + fixture.clockOffset - 5_000;
      expect(
        streams.importStream("legacy", {
          tag: "req-1",
          metadata: { messageId: "m-1" },
          ttlMs: 3_600_000,
          createdAt: t0,
          chunks: [
            { chunk: { type: "start" }, at: t0 + 10 },
            { chunk: { type: "text-delta", delta: "hi" }, at: t0 + 20 },
          ],
        }),
      ).toBe(true);
      expect(streams.status("legacy")).toEqual({
        streamId: "legacy",
        state: "streaming",
        cursor: 2,
        contentType: "application/json",
        encoding: "json",
        tag: "req-1",
        metadata: { messageId: "m-1" },
        createdAt: t0,
        updatedAt: t0 + 20,
        ttlMs: 3_600_000,
        expiresAt: t0 + 20 + 3_600_000,
      });
      expect(chunkRows(state, "legacy")).toEqual([{ seq: 0 }, { seq: 1 }]);
      const writer = streams.open("legacy");
      expect(writer.cursor).toBe(2);
      writer.append({ type: "finish" });
      writer.close();
      expect((await collect(streams.read("legacy"))).map((c) => c.chunk)).toEqual([
        { type: "start" },
        { type: "text-delta", delta: "hi" },
        { type: "finish" },
      ]);
    });
  });

  it("imports a settled stream with its final cursor, settlement time and error in one transaction", async () => {
    await inFixture(async ({ streams }, state) => {
      const counting = countingState(state);
      const importer = new Streams(anotherInstance(counting.state));
      const t0 = 1_700_000_000_000;
      counting.reset();
      expect(
        importer.importStream("old", {
          state: "errored",
          error: "model failed",
          createdAt: t0,
          updatedAt: t0 + 900,
          chunks: [
            { chunk: ["a", "b"], at: t0 + 100 },
            { chunk: "c", at: t0 + 200 },
          ],
        }),
      ).toBe(true);
      // The stream row, two chunk rows, the row's final columns.
      expect(counting.statements(0, /^\s*(INSERT|UPDATE)/)).toHaveLength(4);
      expect(streams.status("old")).toMatchObject({
        state: "errored",
        error: "model failed",
        cursor: 2,
        createdAt: t0,
        updatedAt: t0 + 900,
        closedAt: t0 + 900,
      });
      expect((await collect(streams.read("old"))).map((c) => c.chunk)).toEqual([["a", "b"], "c"]);
      // Opening it again is idempotent; writing into it is what is refused.
      expect(streams.open("old").cursor).toBe(2);
      expect(codeOf(() => streams.open("old").append("more"))).toBe("streams/closed");
    });
  });

  it("leaves a live stream with the same id alone and returns false", async () => {
    await inFixture(({ streams }) => {
      streams.open("s").append("kept");
      expect(streams.importStream("s", { chunks: [{ chunk: "other", at: 1 }] })).toBe(false);
      expect(streams.status("s")).toMatchObject({ cursor: 1 });
    });
  });

  it("lets the sweep delete an imported stream whose time to live ran out before the import", async () => {
    const stub = freshStub("import-expired");
    await inFixture(({ streams }) => {
      const long = Date.now() - 86_400_000;
      streams.importStream("stale", {
        ttlMs: 3_600_000,
        chunks: [{ chunk: "a", at: long }],
      });
      expect(streams.status("stale")).toBeNull();
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture((_fixture, state) => {
      expect(state.storage.sql.exec("SELECT * FROM dk_streams_chunks").toArray()).toEqual([]);
    }, stub);
  });

  it("refuses chunks out of time order, bad times and states, and writes nothing", async () => {
    await inFixture(({ streams }, state) => {
      const bad: unknown[] = [
        {
          chunks: [
            { chunk: "a", at: 2 },
            { chunk: "b", at: 1 },
          ],
        },
        { chunks: [{ chunk: "a" }] },
        { chunks: "a" },
        { chunks: [null] },
        { state: "done" },
        { createdAt: "yesterday" },
        { updatedAt: Number.NaN },
        { error: 42, state: "errored" },
        { ttlMs: 0 },
        { metadata: [1] },
      ];
      for (const options of bad) {
        expect(codeOf(() => streams.importStream("s", options as never))).toBe(
          "streams/invalid-argument",
        );
      }
      expect(state.storage.sql.exec("SELECT * FROM dk_streams_streams").toArray()).toEqual([]);
    });
  });
});
