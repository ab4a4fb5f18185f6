import { describe, expect, it } from "vitest";
import { isStreamsError, type StreamChunk } from "../src/index";
import { collect, inFixture, settle } from "./helpers";

const seqs = (batches: StreamChunk[][]) => batches.map((batch) => batch.map((c) => c.seq));

describe("reading", () => {
  it("replays a settled stream from any cursor and ends", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      for (let i = 0; i < 5; i++) writer.append({ i });
      writer.close();
      expect((await collect(streams.read("s"))).map((c) => c.seq)).toEqual([0, 1, 2, 3, 4]);
      expect(await collect(streams.read("s", { from: 3 }))).toEqual([
        { seq: 3, chunk: { i: 3 } },
        { seq: 4, chunk: { i: 4 } },
      ]);
      expect(await collect(streams.read("s", { from: 5 }))).toEqual([]);
      expect(await collect(streams.read("s", { from: 99 }))).toEqual([]);
    });
  });

  it("slices replay by batchSize from a cursor", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      for (let i = 0; i < 5; i++) writer.append(i);
      writer.close();
      expect(seqs(await collect(streams.readBatches("s", { batchSize: 2 })))).toEqual([
        [0, 1],
        [2, 3],
        [4],
      ]);
      expect(seqs(await collect(streams.readBatches("s", { batchSize: 2, from: 1 })))).toEqual([
        [1, 2],
        [3, 4],
      ]);
    });
  });

  it("coalesces a live tail into one batch per wakeup", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("live");
      writer.append("a");
      const reader = streams.readBatches("live")[Symbol.asyncIterator]();
      expect(seqs([(await reader.next()).value as StreamChunk[]])).toEqual([[0]]);
      const pending = reader.next();
      await settle();
      expect(streams.waitStats()).toEqual({ streams: 1, readers: 1 });
      writer.append("b");
      writer.append("c");
      writer.append("d");
      expect(((await pending).value as StreamChunk[]).map((c) => c.chunk)).toEqual(["b", "c", "d"]);
      writer.close();
      expect((await reader.next()).done).toBe(true);
    });
  });

  it("delivers appends made while the consumer holds a batch, without another wake", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("held");
      writer.append(0);
      const reader = streams.readBatches("held")[Symbol.asyncIterator]();
      expect(((await reader.next()).value as StreamChunk[]).map((c) => c.seq)).toEqual([0]);
      // The reader is suspended at its yield, not parked: these appends wake no one.
      writer.append(1);
      writer.append(2);
      expect(streams.waitStats().readers).toBe(0);
      expect(((await reader.next()).value as StreamChunk[]).map((c) => c.seq)).toEqual([1, 2]);
      writer.close();
      expect((await reader.next()).done).toBe(true);
    });
  });

  it("tails a live stream and ends when the producer settles", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("tail");
      const reading = collect(streams.read("tail"));
      for (let i = 0; i < 3; i++) {
        await settle();
        writer.append(i);
      }
      await settle();
      expect(streams.waitStats().readers).toBe(1);
      writer.close();
      expect((await reading).map((c) => c.chunk)).toEqual([0, 1, 2]);
      expect(streams.waitStats()).toEqual({ streams: 0, readers: 0 });
    });
  });

  it("serves the chunk log of an errored stream, then ends", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("broken");
      writer.append("partial");
      const tailing = collect(streams.read("broken"));
      await settle();
      writer.error("provider hung up");
      expect((await tailing).map((c) => c.chunk)).toEqual(["partial"]);
      expect((await collect(streams.read("broken"))).map((c) => c.chunk)).toEqual(["partial"]);
      expect(streams.status("broken")).toMatchObject({
        state: "errored",
        error: "provider hung up",
        cursor: 1,
      });
    });
  });

  it("tells a tailing reader whether its stream was deleted or expired under it", async () => {
    await inFixture(async (fixture) => {
      const { streams } = fixture;
      streams.open("deleted").append("a");
      streams.open("expired", { ttlMs: 1000 }).append("a");
      streams.open("completed").append("a");
      const ending = (id: string) => {
        const reasons: string[] = [];
        const done = collect(streams.readBatches(id, { onGone: (why) => reasons.push(why) }));
        return done.then((batches) => ({ batches: batches.length, reasons }));
      };
      const deleted = ending("deleted");
      const expired = ending("expired");
      const completed = ending("completed");
      await settle();
      streams.delete("deleted", { force: true });
      streams.open("completed").close();
      fixture.clockOffset += 1001;
      await streams.alarm();
      expect(await deleted).toEqual({ batches: 1, reasons: ["deleted"] });
      expect(await expired).toEqual({ batches: 1, reasons: ["expired"] });
      expect(await completed).toEqual({ batches: 1, reasons: [] });
    });
  });

  it("throws not-found when reading a missing stream, and status probes null", async () => {
    await inFixture(async ({ streams }) => {
      await expect(collect(streams.read("missing"))).rejects.toSatisfy((error) =>
        isStreamsError(error, "streams/not-found"),
      );
      await expect(collect(streams.readBatches("missing"))).rejects.toThrowError(/does not exist/);
      expect(() => streams.readPage("missing")).toThrowError(/does not exist/);
      expect(streams.status("missing")).toBeNull();
    });
  });

  it("ends a tailing read with the signal's reason when it aborts", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      writer.append("a");
      const controller = new AbortController();
      const seen: unknown[] = [];
      const reading = (async () => {
        for await (const chunk of streams.read("s", { signal: controller.signal }))
          seen.push(chunk.chunk);
      })();
      await settle();
      expect(streams.waitStats().readers).toBe(1);
      const reason = new Error("client went away");
      controller.abort(reason);
      await expect(reading).rejects.toBe(reason);
      expect(seen).toEqual(["a"]);
      expect(streams.waitStats()).toEqual({ streams: 0, readers: 0 });
    });
  });

  it("ends a read whose signal aborted while the consumer held a batch", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      writer.append("a");
      const controller = new AbortController();
      const reader = streams
        .readBatches("s", { signal: controller.signal })
        [Symbol.asyncIterator]();
      expect((await reader.next()).done).toBe(false);
      const reason = new Error("gone while holding a batch");
      controller.abort(reason);
      await expect(reader.next()).rejects.toBe(reason);
      expect(streams.waitStats()).toEqual({ streams: 0, readers: 0 });
    });
  });

  it("ends a read at once when its signal is already aborted", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      writer.append("a");
      const reason = new Error("already gone");
      const iterator = streams
        .read("s", { signal: AbortSignal.abort(reason) })
        [Symbol.asyncIterator]();
      await expect(iterator.next()).rejects.toBe(reason);
      await expect(
        collect(streams.readBatches("s", { signal: AbortSignal.abort(reason) })),
      ).rejects.toBe(reason);
      expect(streams.waitStats().readers).toBe(0);
    });
  });

  it("signals up-to-date once, and a synchronous append inside onUpToDate is not lost", async () => {
    await inFixture(async ({ streams }) => {
      const writer = streams.open("s");
      for (let i = 0; i < 3; i++) writer.append(i);
      const log: string[] = [];
      let calls = 0;
      const reading = (async () => {
        for await (const batch of streams.readBatches("s", {
          batchSize: 2,
          onUpToDate: () => {
            calls += 1;
            log.push("up-to-date");
            if (calls === 1) writer.append(3);
          },
        })) {
          log.push(`batch:${batch.map((c) => c.seq).join(",")}`);
        }
      })();
      await settle();
      writer.append(4);
      await settle();
      writer.close();
      await reading;
      expect(log).toEqual(["batch:0,1", "batch:2", "up-to-date", "batch:3", "batch:4"]);
      expect(calls).toBe(1);
    });
  });

  it("leaves the wait registry empty after 1,000 aborted tails", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("busy").append("x");
      const controllers = Array.from({ length: 1000 }, () => new AbortController());
      const reads = controllers.map((controller) =>
        collect(streams.read("busy", { signal: controller.signal })).catch((error) => error),
      );
      await settle();
      expect(streams.waitStats()).toEqual({ streams: 1, readers: 1000 });
      for (const controller of controllers) controller.abort(new Error("bye"));
      const outcomes = await Promise.all(reads);
      expect(outcomes.every((o) => o instanceof Error && o.message === "bye")).toBe(true);
      expect(streams.waitStats()).toEqual({ streams: 0, readers: 0 });
    });
  });

  it("reads one page synchronously with the cursor and whether it is up to date", async () => {
    await inFixture(({ streams }) => {
      const writer = streams.open("p");
      for (let i = 0; i < 5; i++) writer.append(i);
      expect(streams.readPage("p", { from: 1, limit: 2 })).toEqual({
        chunks: [
          { seq: 1, chunk: 1 },
          { seq: 2, chunk: 2 },
        ],
        cursor: 5,
        next: 3,
        upToDate: false,
        state: "streaming",
      });
      expect(streams.readPage("p", { from: 3 })).toMatchObject({ next: 5, upToDate: true });
      expect(streams.readPage("p", { from: 5 })).toMatchObject({
        chunks: [],
        next: 5,
        upToDate: true,
      });
    });
  });

  it("gives a page's chunks as stored with decode: false, the JSON text JSON.stringify made", async () => {
    await inFixture(({ streams }) => {
      const values = [{ b: 1, a: "é\u2028" }, [1.5, -0, null], "text", 7];
      const json = streams.open("j");
      for (const value of values) json.append(value);
      expect(streams.readPage("j", { decode: false }).chunks).toEqual(
        values.map((value, seq) => ({ seq, chunk: JSON.stringify(value) })),
      );
      streams.open("t", { contentType: "text/plain" }).append("plain");
      expect(streams.readPage("t", { decode: false }).chunks).toEqual([{ seq: 0, chunk: "plain" }]);
      streams.open("b", { contentType: "application/octet-stream" }).append(new Uint8Array([1, 2]));
      expect(streams.readPage("b", { decode: false }).chunks).toEqual([
        { seq: 0, chunk: new Uint8Array([1, 2]) },
      ]);
      expect(() => streams.readPage("j", { decode: "no" as never })).toThrowError(
        /decode must be a boolean/,
      );
    });
  });
});
