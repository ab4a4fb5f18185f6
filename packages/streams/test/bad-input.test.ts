import type { AlarmPart } from "@durablekit/compose";
import { anotherInstance, BAD_NAMES, thrownCode } from "@durablekit/test-kit";
import { describe, expect, expectTypeOf, it } from "vitest";
import { isStreamsError, Streams, StreamsError } from "../src/index";
import { collect, inFixture } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCode(fn, isStreamsError);

const _LONE_SURROGATE = "a\uD800b";

describe("bad input", () => {
  it("is an AlarmPart", () => {
    expectTypeOf<Streams>().toMatchTypeOf<AlarmPart>();
  });

  it("refuses a malformed constructor argument or option with streams/invalid-argument", async () => {
    await inFixture(async (_fixture, state) => {
      const attempts: (() => unknown)[] = [
        () => new Streams(undefined as never),
        () => new Streams({} as never),
        () => new Streams(anotherInstance(state), null as never),
        () => new Streams(anotherInstance(state), 5 as never),
        () => new Streams(anotherInstance(state), { maxChunkBytes: 0 }),
        () => new Streams(anotherInstance(state), { maxChunkBytes: 1.5 }),
        () => new Streams(anotherInstance(state), { maxChunkBytes: "big" as never }),
        () => new Streams(anotherInstance(state), { maxSweepStreams: 0 }),
        () => new Streams(anotherInstance(state), { maxSweepStreams: Number.NaN }),
        () => new Streams(anotherInstance(state), { now: 5 as never }),
        () => new Streams(anotherInstance(state), { onEvent: "log" as never }),
      ];
      for (const attempt of attempts) {
        expect(await codeOf(attempt), attempt.toString()).toBe("streams/invalid-argument");
      }
    });
  });

  it("refuses malformed ids, tags and producer ids with streams/invalid-argument and writes nothing", async () => {
    await inFixture(async ({ streams }, state) => {
      const attempts: (() => unknown)[] = [];
      for (const id of BAD_NAMES) {
        const name = id as string;
        attempts.push(
          () => streams.open(name),
          () => streams.write(name, ["a"]),
          () => streams.readPage(name),
          () => collect(streams.read(name)),
          () => collect(streams.readBatches(name)),
          () => streams.status(name),
          () => streams.delete(name),
          () => streams.touch(name),
          () => streams.open("s", { producer: { id: name, epoch: 0 } }),
        );
        if (id !== undefined) {
          attempts.push(
            () => streams.open("s", { tag: name }),
            () => streams.list({ tag: name }),
          );
        }
      }
      for (const attempt of attempts) {
        expect(await codeOf(attempt), attempt.toString()).toBe("streams/invalid-argument");
      }
      expect(streams.list().items).toEqual([]);
      expect(state.storage.sql.exec("SELECT * FROM dk_streams_chunks").toArray()).toEqual([]);
    });
  });

  it("refuses malformed options of every method with streams/invalid-argument", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      writer.append("a");
      const producing = streams.open("p", { producer: { id: "p", epoch: 0 } });
      const attempts: (() => unknown)[] = [
        () => streams.open("s", null as never),
        () => streams.open("s", 5 as never),
        () => streams.open("n", { ttlMs: -1 }),
        () => streams.open("n", { ttlMs: 1.5 }),
        () => streams.open("n", { expiresAt: Number.NaN }),
        () => streams.open("n", { expiresAt: new Date(Number.NaN) }),
        () => streams.open("n", { contentType: "" }),
        () => streams.open("n", { contentType: 5 as never }),
        () => streams.open("n", { encoding: "xml" as never }),
        () => streams.open("n", { metadata: [] as never }),
        () => streams.open("n", { metadata: null as never }),
        () => streams.open("n", { producer: null as never }),
        () => streams.open("n", { producer: { id: "p", epoch: -1 } }),
        () => streams.open("n", { producer: { id: "p", epoch: 0.5 } }),
        () => streams.write("s", "a" as never),
        () => streams.write("s", [], {}),
        () => streams.write("s", ["a"], null as never),
        () => streams.write("s", ["a"], { producer: { id: "p", epoch: 0, seq: -1 } }),
        () => streams.write("s", ["a"], { producer: null as never }),
        () => streams.write("s", ["a"], { writerSeq: "" }),
        () => streams.write("s", ["a"], { settle: 5 as never }),
        () => streams.readPage("s", { from: Number.NaN }),
        () => streams.readPage("s", { limit: Number.POSITIVE_INFINITY }),
        () => streams.readPage("s", null as never),
        () => streams.read("s", { from: "0" as never }),
        () => streams.read("s", 5 as never),
        () => streams.readBatches("s", { batchSize: Number.NaN }),
        () => streams.readBatches("s", { from: Number.NaN }),
        () => streams.list(null as never),
        () => streams.list({ limit: 0 }),
        () => streams.list({ limit: 1001 }),
        () => streams.list({ cursor: "abc" }),
        () => streams.list({ cursor: 5 as never }),
        () => streams.list({ state: "done" as never }),
        () => streams.delete("s", 5 as never),
        () => writer.appendMany([]),
        () => writer.appendMany("ab" as never),
        () => writer.append("a", { producerSeq: 0 }),
        () => writer.append("a", { writerSeq: "" }),
        () => writer.close({ chunks: 5 as never }),
        () => producing.append("a", { producerSeq: -1 }),
      ];
      for (const attempt of attempts) {
        expect(await codeOf(attempt), attempt.toString()).toBe("streams/invalid-argument");
      }
      expect(streams.status("s")).toMatchObject({ state: "streaming", cursor: 1 });
      expect(streams.status("n")).toBeNull();
    });
  });

  it("refuses values with no stored form or over maxChunkBytes with coded errors", async () => {
    await inFixture(async (_fixture, state) => {
      const streams = new Streams(anotherInstance(state), { maxChunkBytes: 8 });
      const json = streams.open("j");
      const text = streams.open("t", { contentType: "text/plain" });
      expect(await codeOf(() => json.append(10n as never))).toBe("streams/unserializable");
      expect(await codeOf(() => text.append(5 as never))).toBe("streams/unserializable");
      expect(await codeOf(() => json.append("x".repeat(20)))).toBe("streams/too-large");
      expect(await codeOf(() => streams.open("m", { metadata: { big: 10n as never } }))).toBe(
        "streams/unserializable",
      );
    });
  });

  it("refuses tables written by a newer version with streams/schema-too-new", async () => {
    await inFixture(async (_fixture, state) => {
      const version = state.storage.sql
        .exec<{ value: number }>("SELECT value FROM dk_streams_meta WHERE name = 'schema_version'")
        .one().value;
      state.storage.sql.exec("UPDATE dk_streams_meta SET value = 99 WHERE name = 'schema_version'");
      let caught: unknown;
      try {
        new Streams(anotherInstance(state));
      } catch (error) {
        caught = error;
      }
      expect(isStreamsError(caught, "streams/schema-too-new")).toBe(true);
      expect(caught).toBeInstanceOf(StreamsError);
      expect((caught as StreamsError).retryable).toBe(false);
      state.storage.sql.exec(
        "UPDATE dk_streams_meta SET value = ? WHERE name = 'schema_version'",
        version,
      );
    });
  });

  it("refuses a second Streams over the same object with streams/conflict, naming the fix, and lets a new instance build its own", async () => {
    await inFixture(async (fixture, state) => {
      // The fixture object built its Streams in its constructor; a second one, as a part built
      // per request would be, is refused, and the first one goes on.
      let caught: unknown;
      try {
        new Streams(state);
      } catch (error) {
        caught = error;
      }
      expect(isStreamsError(caught, "streams/conflict")).toBe(true);
      expect((caught as Error).message).toContain(
        "This object already has a Streams: construct parts once, in the constructor (this.streams = new Streams(ctx)), and use that one for every request and call.",
      );
      await fixture.streams.open("still-works").append("a");
      // A restart's new instance has a state of its own, and builds its Streams over it.
      const restarted = new Streams(anotherInstance(state));
      expect(restarted.status("still-works")?.state).toBe("streaming");
    });
  });
});
