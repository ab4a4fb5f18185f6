import { evictDurableObject } from "cloudflare:test";
import { anotherInstance, countingState, thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isStreamsError, Streams } from "../src/index";
import { chunkRows, collect, freshStub, inFixture } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isStreamsError);

describe("producer fencing", () => {
  it("answers a retried producer write with the original seq and writes nothing", async () => {
    await inFixture((_fixture, state) => {
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state));
      const writer = streams.open("s", { producer: { id: "p", epoch: 0 } });
      writer.append("unrelated-0", { producerSeq: 0 });
      expect(writer.append("x", { producerSeq: 1 })).toBe(1);
      streams.open("s").append("from another writer");
      counting.reset();
      expect(writer.append("x (retry)", { producerSeq: 1 })).toBe(1);
      expect(writer.append("0 (retry)", { producerSeq: 0 })).toBe(0);
      expect(counting.counts().rowsWritten).toBe(0);
      expect(chunkRows(state, "s").length).toBe(3);

      const again = streams.write("s", ["x"], { producer: { id: "p", epoch: 0, seq: 1 } });
      expect(again).toMatchObject({
        duplicate: true,
        firstSeq: 1,
        lastSeq: 1,
        cursor: 3,
        producer: { id: "p", epoch: 0, seq: 1 },
      });
    });
  });

  it("fences a stale epoch at open and at every write", async () => {
    await inFixture(({ streams }) => {
      const zombie = streams.open("s", { producer: { id: "p", epoch: 0 } });
      zombie.append("old session");
      const restarted = streams.open("s", { producer: { id: "p", epoch: 1 } });
      expect(restarted.append("new session")).toBe(1);

      let caught: unknown;
      try {
        zombie.append("late write");
      } catch (error) {
        caught = error;
      }
      expect(caught).toMatchObject({ code: "streams/fenced", currentEpoch: 1, receivedEpoch: 0 });
      expect(codeOf(() => zombie.close())).toBe("streams/fenced");
      expect(codeOf(() => streams.open("s", { producer: { id: "p", epoch: 0 } }))).toBe(
        "streams/fenced",
      );
      expect(streams.status("s")).toMatchObject({ state: "streaming", cursor: 2 });
    });
  });

  it("fences an older epoch's appends and close as soon as a newer epoch opens, before it writes", async () => {
    const stub = freshStub("epoch-open");
    await inFixture((_fixture, state) => {
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state));
      const zombie = streams.open("s", { producer: { id: "p", epoch: 0 } });
      zombie.append("old session");
      const mark = counting.mark();
      streams.open("s", { producer: { id: "p", epoch: 1 } });
      // Recording the newer epoch is one row written, once.
      expect(counting.counts(mark).rowsWritten).toBe(1);
      const again = counting.mark();
      streams.open("s", { producer: { id: "p", epoch: 1 } });
      expect(counting.counts(again).rowsWritten).toBe(0);

      expect(() => zombie.append("late write")).toThrow(
        expect.objectContaining({ code: "streams/fenced", currentEpoch: 1, receivedEpoch: 0 }),
      );
      expect(codeOf(() => zombie.appendMany(["a", "b"]))).toBe("streams/fenced");
      expect(codeOf(() => zombie.close())).toBe("streams/fenced");
      expect(streams.status("s")).toMatchObject({ state: "streaming", cursor: 1 });
    }, stub);
    await evictDurableObject(stub);
    await inFixture(({ streams }) => {
      // The recorded epoch survives a restart: the zombie's retry through write() is fenced too.
      expect(
        codeOf(() => streams.write("s", ["late"], { producer: { id: "p", epoch: 0, seq: 1 } })),
      ).toBe("streams/fenced");
      expect(
        codeOf(() =>
          streams.write("s", [], { producer: { id: "p", epoch: 0, seq: 1 }, settle: true }),
        ),
      ).toBe("streams/fenced");
      expect(
        codeOf(() => streams.write("s", ["x"], { producer: { id: "p", epoch: 1, seq: 3 } })),
      ).toBe("streams/producer-epoch-seq");
      const restarted = streams.open("s", { producer: { id: "p", epoch: 1 } });
      expect(restarted.append("new session")).toBe(1);
      expect(restarted.close()).toMatchObject({ settled: true, state: "completed", cursor: 2 });
    }, stub);
  });

  it("fences a producer that never wrote once a newer epoch of it opens", async () => {
    await inFixture(({ streams }) => {
      streams.open("s");
      const zombie = streams.open("s", { producer: { id: "p", epoch: 0 } });
      streams.open("s", { producer: { id: "p", epoch: 1 } });
      expect(codeOf(() => zombie.append("first write, too late"))).toBe("streams/fenced");
      expect(codeOf(() => zombie.close())).toBe("streams/fenced");
      expect(streams.status("s")).toMatchObject({ state: "streaming", cursor: 0 });
    });
  });

  it("refuses a sequence gap and a new epoch that does not start at 0", async () => {
    await inFixture(({ streams }) => {
      streams.open("s");
      const write = (epoch: number, seq: number) =>
        streams.write("s", [`e${epoch}s${seq}`], { producer: { id: "p", epoch, seq } });
      expect(codeOf(() => write(0, 1))).toBe("streams/producer-seq-gap");
      expect(write(0, 0).firstSeq).toBe(0);
      let gap: unknown;
      try {
        write(0, 2);
      } catch (error) {
        gap = error;
      }
      expect(gap).toMatchObject({
        code: "streams/producer-seq-gap",
        expectedSeq: 1,
        receivedSeq: 2,
      });
      expect(codeOf(() => write(1, 5))).toBe("streams/producer-epoch-seq");
      expect(write(1, 0).firstSeq).toBe(1);
      expect(codeOf(() => write(0, 1))).toBe("streams/fenced");
      expect(streams.status("s")?.cursor).toBe(2);
    });
  });

  it("keeps independent state per producer, interleaved on one stream", async () => {
    await inFixture(({ streams }) => {
      streams.open("s");
      const write = (id: string, seq: number) =>
        streams.write("s", [`${id}${seq}`], { producer: { id, epoch: 0, seq } });
      write("a", 0);
      write("b", 0);
      write("a", 1);
      write("b", 1);
      expect(write("a", 0)).toMatchObject({ duplicate: true, firstSeq: 0, producer: { seq: 1 } });
      expect(write("b", 1)).toMatchObject({ duplicate: true, firstSeq: 3 });
      write("b", 2);
      expect(streams.readPage("s").chunks.map((c) => c.chunk)).toEqual([
        "a0",
        "b0",
        "a1",
        "b1",
        "b2",
      ]);
    });
  });

  it("deduplicates a whole multi-chunk write and reports its original range", async () => {
    await inFixture(({ streams }) => {
      streams.open("s", { contentType: "application/json" });
      streams.write("s", ["solo"], {});
      const first = streams.write("s", [1, 2, 3], { producer: { id: "p", epoch: 0, seq: 0 } });
      expect(first).toMatchObject({ firstSeq: 1, lastSeq: 3, duplicate: false });
      streams.write("s", [4], { producer: { id: "p", epoch: 0, seq: 1 } });
      expect(
        streams.write("s", [1, 2, 3], { producer: { id: "p", epoch: 0, seq: 0 } }),
      ).toMatchObject({
        firstSeq: 1,
        lastSeq: 3,
        duplicate: true,
        cursor: 5,
      });
    });
  });

  it("recovers producer state from storage after eviction, so a retry after a restart is still deduplicated", async () => {
    const stub = freshStub("producer-evict");
    await inFixture(({ streams }) => {
      const writer = streams.open("s", { producer: { id: "task-run-1", epoch: 3 } });
      writer.append("step 0", { producerSeq: 0 });
      streams.open("s").append("someone else");
      writer.append("step 1", { producerSeq: 1 });
    }, stub);
    await evictDurableObject(stub);
    await inFixture((_fixture, state) => {
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state));
      const replay = streams.open("s", { producer: { id: "task-run-1", epoch: 3 } });
      counting.reset();
      expect(replay.append("step 0", { producerSeq: 0 })).toBe(0);
      expect(replay.append("step 1", { producerSeq: 1 })).toBe(2);
      expect(counting.counts().rowsWritten).toBe(0);
      expect(replay.append("step 2", { producerSeq: 2 })).toBe(3);
      expect(codeOf(() => streams.open("s", { producer: { id: "task-run-1", epoch: 2 } }))).toBe(
        "streams/fenced",
      );
    }, stub);
  });

  it("appends exactly once across replays when steps key their appends by producerSeq", async () => {
    const stub = freshStub("replay");
    // A replayable producer: each run starts from the top, deriving producerSeq from its position.
    const run = (streams: Streams, crashAfter: number | null) => {
      const writer = streams.open("out", { producer: { id: "run-42", epoch: 0 } });
      for (let step = 0; step < 5; step++) {
        writer.append({ step }, { producerSeq: step });
        if (step === crashAfter) return "crashed";
      }
      writer.close({ producerSeq: 5 });
      return "done";
    };
    await inFixture(({ streams }) => run(streams, 1), stub);
    await evictDurableObject(stub);
    await inFixture(({ streams }) => run(streams, 3), stub);
    await evictDurableObject(stub);
    await inFixture(async ({ streams }) => {
      expect(run(streams, null)).toBe("done");
      expect(run(streams, null)).toBe("done");
      expect((await collect(streams.read("out"))).map((c) => c.chunk)).toEqual([
        { step: 0 },
        { step: 1 },
        { step: 2 },
        { step: 3 },
        { step: 4 },
      ]);
      expect(streams.status("out")).toMatchObject({ state: "completed", cursor: 5 });
    }, stub);
  });

  it("settles with a producer write and answers its retry as a duplicate, refusing other writers", async () => {
    await inFixture(({ streams }) => {
      streams.open("s", { contentType: "text/plain" });
      const closing = { producer: { id: "a", epoch: 0, seq: 0 }, settle: true as const };
      expect(streams.write("s", ["final"], closing)).toMatchObject({
        settled: true,
        firstSeq: 0,
        state: "completed",
      });
      expect(streams.write("s", ["final, resent"], closing)).toMatchObject({
        duplicate: true,
        settled: false,
        firstSeq: 0,
        state: "completed",
      });
      expect(
        codeOf(() =>
          streams.write("s", ["x"], { producer: { id: "b", epoch: 0, seq: 0 }, settle: true }),
        ),
      ).toBe("streams/closed");
      expect(
        codeOf(() => streams.write("s", ["x"], { producer: { id: "a", epoch: 0, seq: 1 } })),
      ).toBe("streams/closed");
      expect(streams.write("s", [], { settle: true })).toMatchObject({
        settled: false,
        duplicate: false,
      });

      // A settle that stores no chunk still consumes the producer's seq.
      streams.open("t");
      streams.write("t", ["m"], { producer: { id: "a", epoch: 0, seq: 0 } });
      const closeOnly = { producer: { id: "a", epoch: 0, seq: 1 }, settle: true as const };
      expect(streams.write("t", [], closeOnly)).toMatchObject({
        settled: true,
        producer: { seq: 1 },
      });
      expect(streams.write("t", [], closeOnly)).toMatchObject({ duplicate: true, firstSeq: null });
      expect(streams.status("t")).toMatchObject({ state: "completed", cursor: 1 });
    });
  });

  it("leaves no gap and no phantom producer state when the host rolls back a transaction around an append", async () => {
    await inFixture((_fixture, state) => {
      const streams = new Streams(anotherInstance(state));
      const writer = streams.open("s", { producer: { id: "p", epoch: 0 } });
      writer.append("kept", { producerSeq: 0 });
      expect(() =>
        state.storage.transactionSync(() => {
          writer.append("rolled back", { producerSeq: 1 });
          streams.open("plain").append("rolled back too");
          throw new Error("host failure after the append");
        }),
      ).toThrowError(/host failure/);
      // Memory said seq 1 and cursor 2; storage says otherwise, and storage wins.
      expect(writer.append("retried", { producerSeq: 1 })).toBe(1);
      expect(writer.append("next")).toBe(2);
      expect(streams.readPage("s").chunks.map((c) => c.chunk)).toEqual(["kept", "retried", "next"]);
      expect(chunkRows(state, "s").map((r) => r.seq)).toEqual([0, 1, 2]);
    });
  });

  it("refuses a writerSeq that does not sort after the last one, also after a restart", async () => {
    await inFixture(({ streams }, state) => {
      const writer = streams.open("s");
      writer.append("a", { writerSeq: "001" });
      writer.append("b");
      writer.append("c", { writerSeq: "002" });
      expect(codeOf(() => writer.append("d", { writerSeq: "002" }))).toBe(
        "streams/writer-seq-regression",
      );
      expect(codeOf(() => writer.append("d", { writerSeq: "0015" }))).toBe(
        "streams/writer-seq-regression",
      );
      // "10" sorts before "2" as a string: writer sequences are lexicographic.
      writer.append("e", { writerSeq: "2" });
      expect(codeOf(() => writer.append("f", { writerSeq: "10" }))).toBe(
        "streams/writer-seq-regression",
      );
      writer.append("f");
      // A new instance (nothing in memory) finds the last writerSeq in the chunk log.
      const restarted = new Streams(anotherInstance(state)).open("s");
      expect(codeOf(() => restarted.append("g", { writerSeq: "15" }))).toBe(
        "streams/writer-seq-regression",
      );
      expect(restarted.append("g", { writerSeq: "3" })).toBe(5);
    });
  });
});
