import { Streams } from "@durablekit/streams";
import { anotherInstance, countingState, thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { ChatTurns, type ChatUIMessageChunk, INTERRUPTED_TEXT, isChatError } from "../src/index";
import { frames, inFixture, scriptedChunks, totalChanges } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isChatError);

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

function chunkRowCount(state: DurableObjectState): number {
  return state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dk_streams_chunks").one()
    .n;
}

describe("turns", () => {
  it("replays a finished turn from a start chunk carrying the turn's messageId", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("c1", { messageId: "m-1" });
      const script = scriptedChunks(5);
      for (const chunk of script) turn.write(chunk);
      turn.finish();
      expect(await collect(chat.read(turn.turnId))).toEqual([
        { type: "start", messageId: "m-1" },
        ...script,
      ]);
    });
  });

  it("keeps the model's own start chunk but stamps the turn's messageId on it", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("c1", { messageId: "m-1" });
      turn.write({ type: "start", messageId: "other", messageMetadata: { a: 1 } });
      turn.finish();
      expect(await collect(chat.read(turn.turnId))).toEqual([
        { type: "start", messageId: "m-1", messageMetadata: { a: 1 } },
      ]);
    });
  });

  it("packs a 100-chunk turn into 2 stored chunk rows (64 chunks a segment)", async () => {
    await inFixture(async ({ chat }, state) => {
      const turn = chat.startTurn("c1");
      const script = scriptedChunks(97); // + text-start, text-end, finish = 100, + start = 101
      for (const chunk of script) turn.write(chunk);
      turn.finish();
      expect(chunkRowCount(state)).toBe(2);
      expect(await collect(chat.read(turn.turnId))).toHaveLength(101);
    });
  });

  it("flushes a segment after about 50 ms without a write", async () => {
    await inFixture(async ({ chat }, state) => {
      const turn = chat.startTurn("c1");
      turn.write({ type: "text-start", id: "t" });
      expect(chunkRowCount(state)).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(chunkRowCount(state)).toBe(1);
      turn.finish();
    });
  });

  it("flushes at the byte bound before a segment would outgrow it", async () => {
    await inFixture(async (fixture, state) => {
      const chat = new ChatTurns(anotherInstance(state), {
        streams: fixture.streams,
        maxSegmentBytes: 1000,
      });
      const turn = chat.startTurn("c1");
      for (let i = 0; i < 10; i++)
        turn.write({ type: "text-delta", id: "t", delta: "y".repeat(300) });
      turn.finish();
      const sizes = state.storage.sql
        .exec<{ n: number }>("SELECT length(body) AS n FROM dk_streams_chunks")
        .toArray()
        .map((row) => row.n);
      for (const size of sizes) expect(size).toBeLessThanOrEqual(1000);
      expect(await collect(chat.read(turn.turnId))).toHaveLength(11);
    });
  });

  it("lets a resumer in the same isolate see chunks still in the buffer", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("c1", { messageId: "m" });
      turn.write({ type: "text-start", id: "t" });
      turn.write({ type: "text-delta", id: "t", delta: "a" });
      const reader = chat.read(turn.turnId)[Symbol.asyncIterator]();
      const seen: ChatUIMessageChunk[] = [];
      for (let i = 0; i < 3; i++) seen.push((await reader.next()).value as ChatUIMessageChunk);
      expect(seen.map((c) => c.type)).toEqual(["start", "text-start", "text-delta"]);
      turn.write({ type: "text-end", id: "t" });
      turn.finish();
      expect((await reader.next()).value).toEqual({ type: "text-end", id: "t" });
      expect((await reader.next()).done).toBe(true);
    });
  });

  it("delivers a chunk too large to store live, leaves it out of storage and reports it", async () => {
    await inFixture(async (fixture, state) => {
      const events: unknown[] = [];
      const chat = new ChatTurns(anotherInstance(state), {
        streams: fixture.streams,
        maxSegmentBytes: 1000,
        onEvent: (event) => events.push(event),
      });
      const turn = chat.startTurn("c1", { messageId: "m" });
      const live = collect(turn.live());
      const big = { type: "data-blob", data: "z".repeat(2000) };
      turn.write({ type: "text-start", id: "t" });
      turn.write(big);
      turn.finish();
      expect(await live).toEqual([
        { type: "start", messageId: "m" },
        { type: "text-start", id: "t" },
        big,
      ]);
      expect(turn.chunksNotStored).toBe(1);
      expect(events).toEqual([
        {
          type: "chat:chunk-not-stored",
          chatId: "c1",
          turnId: turn.turnId,
          chunkType: "data-blob",
          bytes: JSON.stringify(big).length,
        },
      ]);
      expect((await collect(chat.read(turn.turnId))).map((c) => c.type)).toEqual([
        "start",
        "text-start",
      ]);
    });
  });

  it("ends a failed turn with an error chunk and an errored stream", async () => {
    await inFixture(async ({ chat, streams }) => {
      const turn = chat.startTurn("c1", { messageId: "m" });
      turn.write({ type: "text-start", id: "t" });
      turn.fail("model unavailable");
      expect(await collect(chat.read(turn.turnId))).toEqual([
        { type: "start", messageId: "m" },
        { type: "text-start", id: "t" },
        { type: "error", errorText: "model unavailable" },
      ]);
      expect(streams.status(`dk-chat/${turn.turnId}`)).toMatchObject({ state: "errored" });
      expect(codeOf(() => turn.write({ type: "text-delta", id: "t", delta: "x" }))).toBe(
        "chat/closed",
      );
      turn.finish(); // settling an ended turn is a no-op
      expect(streams.status(`dk-chat/${turn.turnId}`)).toMatchObject({ state: "errored" });
    });
  });

  it("ends the chat's previous turn as failed when a new turn starts", async () => {
    await inFixture(async ({ chat }) => {
      const first = chat.startTurn("c1");
      first.write({ type: "text-start", id: "t" });
      const second = chat.startTurn("c1");
      expect(first.streaming).toBe(false);
      expect(chat.activeTurn("c1")?.turnId).toBe(second.turnId);
      const replay = await collect(chat.read(first.turnId));
      expect(replay[replay.length - 1]).toMatchObject({ type: "error" });
      second.finish();
    });
  });

  it("refuses malformed chat ids, chunks and options", async () => {
    await inFixture(async (fixture, state) => {
      const { chat } = fixture;
      for (const bad of ["", 7, "x".repeat(241)]) {
        expect(codeOf(() => chat.startTurn(bad as string))).toBe("chat/invalid-argument");
        expect(codeOf(() => chat.activeTurn(bad as string))).toBe("chat/invalid-argument");
      }
      const turn = chat.startTurn("c1");
      for (const bad of [null, "x", { type: 3 }, { type: "x", n: 1n }]) {
        expect(codeOf(() => turn.write(bad as ChatUIMessageChunk))).toBe("chat/invalid-argument");
      }
      expect(codeOf(() => new ChatTurns(anotherInstance(state), {} as never))).toBe(
        "chat/invalid-argument",
      );
      expect(
        codeOf(
          () =>
            new ChatTurns(anotherInstance(state), {
              streams: fixture.streams,
              maxFlushDelayMs: 0,
            }),
        ),
      ).toBe("chat/invalid-argument");
      expect(codeOf(() => new ChatTurns({} as never, { streams: fixture.streams }))).toBe(
        "chat/invalid-argument",
      );
    });
  });

  it("refuses a second ChatTurns over the same object with chat/conflict, naming the fix", async () => {
    await inFixture(async (fixture, state) => {
      const own = fixture.chat;
      let caught: unknown;
      try {
        new ChatTurns(state, { streams: fixture.streams });
      } catch (error) {
        caught = error;
      }
      expect(isChatError(caught, "chat/conflict")).toBe(true);
      expect((caught as Error).message).toContain(
        "This object already has a ChatTurns: construct parts once, in the constructor (this.chat = new ChatTurns(ctx, { streams: this.streams })), and use that one for every request and call.",
      );
      // The object's own ChatTurns goes on.
      own.startTurn("after").finish();
      expect(own.activeTurn("after")).toBeNull();
    });
  });
});

describe("HTTP", () => {
  it("answers a resume with no active turn with 204", async () => {
    await inFixture(async ({ chat }) => {
      expect(chat.resumeResponse("nobody").status).toBe(204);
      const turn = chat.startTurn("c1");
      turn.finish();
      expect(chat.resumeResponse("c1").status).toBe(204);
    });
  });

  it("streams a turn as the AI SDK's UI message stream, ending with [DONE]", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("c1", { messageId: "m" });
      const response = chat.turnResponse(turn);
      expect(Object.fromEntries(response.headers)).toMatchObject({
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-vercel-ai-ui-message-stream": "v1",
        "x-accel-buffering": "no",
      });
      turn.write({ type: "text-start", id: "t" });
      const resumed = chat.resumeResponse("c1");
      expect(resumed.status).toBe(200);
      turn.write({ type: "text-delta", id: "t", delta: "hello" });
      turn.write({ type: "text-end", id: "t" });
      turn.finish();
      const expected = [
        { type: "start", messageId: "m" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "hello" },
        { type: "text-end", id: "t" },
        "[DONE]",
      ];
      expect(await frames(response)).toEqual(expected);
      expect(await frames(resumed)).toEqual(expected);
    });
  });

  it("ends a turn left streaming by a restart with an error chunk when it is resumed", async () => {
    await inFixture(async (fixture, state) => {
      const before = new ChatTurns(anotherInstance(state), { streams: fixture.streams });
      const turn = before.startTurn("c1", { messageId: "m" });
      turn.write({ type: "text-start", id: "t" });
      turn.flush();
      // A new isolate: the same storage, no writer.
      const after = new ChatTurns(anotherInstance(state), {
        streams: new Streams(anotherInstance(state)),
      });
      expect(after.activeTurn("c1")).toMatchObject({ turnId: turn.turnId, live: false });
      expect(await frames(after.resumeResponse("c1"))).toEqual([
        { type: "start", messageId: "m" },
        { type: "text-start", id: "t" },
        { type: "error", errorText: INTERRUPTED_TEXT },
        "[DONE]",
      ]);
      expect(after.activeTurn("c1")).toBeNull();
    });
  });
});

describe("adoptTurn", () => {
  it("hands a turn left by a restart to a new writer at its stored end, so it can finish", async () => {
    await inFixture(async (fixture, state) => {
      const before = new ChatTurns(anotherInstance(state), { streams: fixture.streams });
      const turn = before.startTurn("c1", { messageId: "m" });
      turn.write({ type: "text-start", id: "t" });
      turn.write({ type: "text-delta", id: "t", delta: "a" });
      turn.flush();
      turn.write({ type: "text-delta", id: "t", delta: "b" }); // still buffered: lost with the isolate
      const after = new ChatTurns(anotherInstance(state), {
        streams: new Streams(anotherInstance(state)),
      });
      const adopted = after.adoptTurn("c1");
      expect(adopted?.stored).toEqual([
        { type: "start", messageId: "m" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "a" },
      ]);
      expect(after.adoptTurn("c1")).toBeNull(); // live here now
      adopted?.turn.write({ type: "text-delta", id: "t", delta: "b" });
      adopted?.turn.finish();
      expect((await collect(after.read(turn.turnId))).map((c) => c.delta ?? c.type)).toEqual([
        "start",
        "text-start",
        "a",
        "b",
      ]);
      expect(after.adoptTurn("c1")).toBeNull();
    });
  });
});

describe("tag isolation", () => {
  it("never takes an application stream sharing a turn's tag for the chat's turn", async () => {
    await inFixture(async ({ chat, streams }) => {
      const turn = chat.startTurn("c1", { messageId: "m" });
      turn.write({ type: "text-start", id: "t" });
      // Newer streams under the same tag: one with another id, one with the reserved prefix but
      // no turn marker, one marked for another chat.
      streams.open("app-stream", { tag: "dk-chat/c1" }).append({ type: "not-a-turn" });
      streams.open("dk-chat/forged", { tag: "dk-chat/c1", metadata: { dkChat: 0 } });
      streams.open("dk-chat/other", {
        tag: "dk-chat/c1",
        metadata: { dkChat: 1, chatId: "c2", messageId: "x" },
      });
      expect(chat.activeTurn("c1")).toMatchObject({ turnId: turn.turnId, messageId: "m" });
      turn.finish();
      expect(chat.activeTurn("c1")).toBeNull();
      expect(chat.resumeResponse("c1").status).toBe(204);
    });
  });
});

describe("storage", () => {
  it("writes at most 220 row changes for 20 turns of 100 chunks of about 120 bytes", async () => {
    await inFixture(async (_fixture, state) => {
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state));
      const chat = new ChatTurns(anotherInstance(counting.state), { streams });
      const script = scriptedChunks(96, 120); // + text-start, text-end, finish = 99, + start = 100
      const sizes = script.map((c) => JSON.stringify(c).length);
      expect(Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length)).toBeGreaterThan(100);
      const before = totalChanges(state);
      counting.reset();
      for (let t = 0; t < 20; t++) {
        const turn = chat.startTurn(`chat-${t}`);
        for (const chunk of script) turn.write(chunk);
        turn.finish();
      }
      const after = totalChanges(state);
      const rowChanges = after - before;
      const rowsWritten = counting.counts().rowsWritten;
      console.log(
        `chat storage: 20 turns x 100 chunks: ${rowChanges} row changes (total_changes), ${rowsWritten} cursor rowsWritten`,
      );
      expect(rowChanges).toBeLessThanOrEqual(220);
      expect(chunkRowCount(state)).toBe(20 * 2);
    });
  });

  it("selects 20 due finished turns for the retention sweep reading at most 20 rows", async () => {
    await inFixture(async (_fixture, state) => {
      let offset = 0;
      const counting = countingState(state);
      const streams = new Streams(anotherInstance(counting.state), {
        now: () => Date.now() + offset,
      });
      const chat = new ChatTurns(anotherInstance(counting.state), { streams });
      const script = scriptedChunks(96);
      for (let t = 0; t < 20; t++) {
        const turn = chat.startTurn(`chat-${t}`);
        for (const chunk of script) turn.write(chunk);
        turn.finish();
      }
      offset += 11 * 60_000;
      counting.reset();
      await streams.alarm();
      const selectReads = counting.counts(0, /wake_at <= \?/).rowsRead;
      console.log(
        `chat retention sweep: select read ${selectReads} rows for 20 due turns; whole sweep read ${counting.counts().rowsRead}`,
      );
      expect(selectReads).toBeLessThanOrEqual(20);
      expect(state.storage.sql.exec("SELECT * FROM dk_streams_streams").toArray()).toEqual([]);
      expect(chunkRowCount(state)).toBe(0);
    });
  });

  it("keeps a finished turn for 10 minutes and a streaming one for an hour after its last write", async () => {
    await inFixture(async (fixture) => {
      const { chat, streams } = fixture;
      const done = chat.startTurn("done");
      done.write({ type: "text-start", id: "t" });
      done.finish();
      const stuck = chat.startTurn("stuck");
      stuck.write({ type: "text-start", id: "t" });
      stuck.flush();
      fixture.clockOffset += 9 * 60_000;
      await streams.alarm();
      expect(streams.status(`dk-chat/${done.turnId}`)).not.toBeNull();
      fixture.clockOffset += 2 * 60_000;
      await streams.alarm();
      expect(streams.status(`dk-chat/${done.turnId}`)).toBeNull();
      expect(chat.activeTurn("stuck")).not.toBeNull();
      fixture.clockOffset += 50 * 60_000; // 61 min after its last write
      await streams.alarm();
      expect(chat.activeTurn("stuck")).toBeNull();
      expect(streams.list({}).items).toEqual([]);
    });
  });
});

describe("listTurns", () => {
  it("pages a chat's turns newest first, by state, skipping other chats and the app's streams on the chat's tag, and finds one by id", async () => {
    await inFixture(async ({ chat, streams }) => {
      const first = chat.startTurn("c1", { messageId: "m-1" });
      first.finish();
      const other = chat.startTurn("c2", { messageId: "m-x" });
      other.finish();
      // An application stream that shares the chat's tag is not a turn.
      streams.open("app-notes", { tag: "dk-chat/c1" });
      const second = chat.startTurn("c1", { messageId: "m-2" });
      second.write({ type: "text-start", id: "t" });

      const all = chat.listTurns("c1");
      expect(all.items.map((turn) => [turn.messageId, turn.state, turn.live])).toEqual([
        ["m-2", "streaming", true],
        ["m-1", "completed", false],
      ]);
      expect(all.next).toBeNull();
      expect(chat.listTurns("c1", { state: "completed" }).items.map((t) => t.turnId)).toEqual([
        first.turnId,
      ]);

      const page = chat.listTurns("c1", { limit: 1 });
      expect(page.items.map((t) => t.turnId)).toEqual([second.turnId]);
      expect(page.next).not.toBeNull();
      const rest = chat.listTurns("c1", { limit: 2, cursor: page.next ?? undefined });
      // The app's stream is skipped: one turn on a page of two streams.
      expect(rest.items.map((t) => t.turnId)).toEqual([first.turnId]);

      expect(chat.getTurn(second.turnId)).toEqual(all.items[0]);
      expect(chat.getTurn(other.turnId)).toMatchObject({ chatId: "c2", messageId: "m-x" });
      expect(chat.getTurn("no-such-turn")).toBeNull();
      expect(codeOf(() => chat.getTurn(""))).toBe("chat/invalid-argument");
      second.finish();
    });
  });

  it("refuses a malformed chat id, limit, state or cursor with chat/invalid-argument", async () => {
    await inFixture(async ({ chat }) => {
      expect(codeOf(() => chat.listTurns(""))).toBe("chat/invalid-argument");
      expect(codeOf(() => chat.listTurns("c1", { limit: 0 }))).toBe("chat/invalid-argument");
      expect(codeOf(() => chat.listTurns("c1", { limit: 1001 }))).toBe("chat/invalid-argument");
      expect(codeOf(() => chat.listTurns("c1", { state: "done" as never }))).toBe(
        "chat/invalid-argument",
      );
      expect(codeOf(() => chat.listTurns("c1", { cursor: "nope" }))).toBe("chat/invalid-argument");
      expect(codeOf(() => chat.listTurns("c1", { cursor: 7 as never }))).toBe(
        "chat/invalid-argument",
      );
    });
  });
});
