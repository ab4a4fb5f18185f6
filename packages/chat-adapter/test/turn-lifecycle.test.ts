import { Streams } from "@durablekit/streams";
import { anotherInstance, BAD_NAMES, thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import {
  ChatTurns,
  type ChatUIMessageChunk,
  INTERRUPTED_TEXT,
  isChatError,
  NOT_STORED_TEXT,
} from "../src/index";
import { frames, freshStub, inFixture, scriptedChunks } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isChatError);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** The UI message chunks stored for a turn, in order (segments unpacked). */
function storedChunks(state: DurableObjectState, turnId: string): ChatUIMessageChunk[] {
  return state.storage.sql
    .exec<{ body: string }>(
      `SELECT c.body FROM dk_streams_chunks c JOIN dk_streams_streams s ON s.stream_key = c.stream_key
       WHERE s.stream_id = ? ORDER BY c.seq`,
      `dk-chat/${turnId}`,
    )
    .toArray()
    .flatMap((row) => JSON.parse(row.body) as ChatUIMessageChunk[]);
}

describe("loss on restart is bounded by time", () => {
  it("stores every chunk within maxFlushDelayMs of its write while the model never pauses", async () => {
    await inFixture(async (fixture, state) => {
      // Segments large enough that only the time bound can flush: a chunk every 10 ms for 400 ms.
      const chat = new ChatTurns(anotherInstance(state), {
        streams: fixture.streams,
        maxSegmentChunks: 1000,
        maxFlushDelayMs: 40,
      });
      const turn = chat.startTurn("steady");
      const writtenAt: number[] = [];
      let late = 0;
      for (let i = 0; i < 40; i++) {
        turn.write({ type: "text-delta", id: "t", delta: `${i} ` });
        writtenAt.push(Date.now());
        await sleep(10);
        // Every chunk written more than the bound (plus timer slack) ago is stored by now.
        const due = writtenAt.filter((at) => Date.now() - at > 40 + 60).length;
        const stored = Math.max(0, storedChunks(state, turn.turnId).length - 1); // less the start
        if (stored < due) late += 1;
      }
      expect(late).toBe(0);
      expect(storedChunks(state, turn.turnId).length).toBeGreaterThan(20);
      turn.finish();
    });
  });

  it("stores a chunk of a never-pausing model 50 ms after it was written by default", async () => {
    await inFixture(async ({ chat }, state) => {
      const turn = chat.startTurn("steady-default");
      turn.write({ type: "text-delta", id: "t", delta: "first " });
      const first = Date.now();
      // Keep writing every 10 ms (fewer than a segment's 16 chunks in all): before the fix the
      // idle timer never fired while writes kept coming.
      while (Date.now() - first < 100) {
        await sleep(10);
        turn.write({ type: "text-delta", id: "t", delta: "more " });
      }
      const stored = storedChunks(state, turn.turnId);
      expect(stored.slice(0, 2)).toEqual([
        { type: "start", messageId: turn.messageId },
        { type: "text-delta", id: "t", delta: "first " },
      ]);
      turn.finish();
    });
  });

  it("refuses flushIdleMs, the old name of maxFlushDelayMs, with the new name, and refuses a bad bound", async () => {
    await inFixture(async (fixture, state) => {
      let thrown: unknown;
      try {
        new ChatTurns(anotherInstance(state), {
          streams: fixture.streams,
          flushIdleMs: 20,
        } as never);
      } catch (error) {
        thrown = error;
      }
      expect(
        codeOf(() => {
          throw thrown;
        }),
      ).toBe("chat/invalid-argument");
      expect(String((thrown as Error).message)).toContain("maxFlushDelayMs");
      for (const bad of [0, -1, 0.5, "50", Number.NaN]) {
        expect(
          codeOf(
            () =>
              new ChatTurns(anotherInstance(state), {
                streams: fixture.streams,
                maxFlushDelayMs: bad as number,
              }),
          ),
        ).toBe("chat/invalid-argument");
      }
    });
  });
});

describe("every replay begins with the turn's start", () => {
  it("begins the resume of a turn that stored nothing before a restart with its start and messageId", async () => {
    await inFixture(async (fixture, state) => {
      const before = new ChatTurns(anotherInstance(state), { streams: fixture.streams });
      const turn = before.startTurn("c1", { messageId: "m-0" });
      turn.write({ type: "text-start", id: "t" }); // buffered only: lost with the isolate
      // A new isolate: the same storage, no writer.
      const after = new ChatTurns(anotherInstance(state), {
        streams: new Streams(anotherInstance(state)),
      });
      expect(await frames(after.resumeResponse("c1"))).toEqual([
        { type: "start", messageId: "m-0" },
        { type: "error", errorText: INTERRUPTED_TEXT },
        "[DONE]",
      ]);
    });
  });

  it("gives a resumer attached before the first write the start at once, and the model's start only once", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("c1", { messageId: "m-1" });
      const reader = chat.read(turn.turnId)[Symbol.asyncIterator]();
      expect((await reader.next()).value).toEqual({ type: "start", messageId: "m-1" });
      turn.write({ type: "start", messageMetadata: { model: "x" } });
      turn.write({ type: "text-start", id: "t" });
      turn.finish();
      const rest: ChatUIMessageChunk[] = [];
      for (let next = await reader.next(); !next.done; next = await reader.next())
        rest.push(next.value);
      expect(rest).toEqual([
        { type: "message-metadata", messageMetadata: { model: "x" } },
        { type: "text-start", id: "t" },
      ]);
      // A replay after the fact shows the stored start as the model sent it, stamped.
      expect((await collect(chat.read(turn.turnId)))[0]).toEqual({
        type: "start",
        messageId: "m-1",
        messageMetadata: { model: "x" },
      });
    });
  });
});

describe("a turn that can no longer be stored ends loudly", () => {
  it("ends the live response and the stored turn with an error chunk when a limit refuses a flush", async () => {
    await inFixture(async (_fixture, state) => {
      const events: unknown[] = [];
      // The streams take chunks of at most 400 bytes; the turn packs segments of up to 64 KiB.
      const streams = new Streams(anotherInstance(state), { maxChunkBytes: 400 });
      const chat = new ChatTurns(anotherInstance(state), {
        streams,
        onEvent: (event) => events.push(event),
      });
      const turn = chat.startTurn("c1", { messageId: "m" });
      const live = chat.turnResponse(turn);
      turn.write({ type: "text-start", id: "t" });
      turn.flush();
      const resumed = chat.resumeResponse("c1"); // attached before the failure
      for (let i = 0; i < 10; i++)
        turn.write({ type: "text-delta", id: "t", delta: "y".repeat(50) });
      expect(codeOf(() => turn.flush())).toBe("chat/storage");
      expect(turn.streaming).toBe(false);
      const error = { type: "error", errorText: NOT_STORED_TEXT };
      const liveFrames = await frames(live);
      expect(liveFrames.slice(-2)).toEqual([error, "[DONE]"]);
      expect(liveFrames).toHaveLength(1 + 1 + 10 + 2);
      expect(await frames(resumed)).toEqual([
        { type: "start", messageId: "m" },
        { type: "text-start", id: "t" },
        error,
        "[DONE]",
      ]);
      expect((await collect(chat.read(turn.turnId))).at(-1)).toEqual(error);
      expect(streams.status(`dk-chat/${turn.turnId}`)).toMatchObject({ state: "errored" });
      expect(events).toMatchObject([{ type: "chat:flush-failed", turnId: turn.turnId }]);
    });
  });

  it("ends the live response with an error chunk when the turn's stream expired during a long pause", async () => {
    await inFixture(async (fixture) => {
      const { chat, streams } = fixture;
      const turn = chat.startTurn("paused", { messageId: "m" });
      const live = chat.turnResponse(turn);
      turn.write({ type: "text-start", id: "t" });
      turn.flush();
      // The model goes quiet for more than an hour: the sweep removes the abandoned turn.
      fixture.clockOffset += 61 * 60_000;
      await streams.alarm();
      expect(streams.status(`dk-chat/${turn.turnId}`)).toBeNull();
      turn.write({ type: "text-delta", id: "t", delta: "late" });
      expect(codeOf(() => turn.flush())).toBe("chat/storage");
      expect((await frames(live)).slice(-3)).toEqual([
        { type: "text-delta", id: "t", delta: "late" },
        { type: "error", errorText: NOT_STORED_TEXT },
        "[DONE]",
      ]);
    });
  });
});

describe("settling a turn that is already over", () => {
  it("is a no-op for finish and fail after the turn finished, failed or was superseded", async () => {
    await inFixture(async ({ chat }) => {
      const finished = chat.startTurn("a");
      finished.finish();
      finished.finish();
      finished.fail("late");
      const failed = chat.startTurn("b");
      failed.fail("first");
      failed.fail("second");
      failed.finish();
      const superseded = chat.startTurn("c");
      chat.startTurn("c");
      superseded.fail("after the new turn");
      superseded.finish();
      expect((await collect(chat.read(finished.turnId))).map((c) => c.type)).toEqual(["start"]);
      expect((await collect(chat.read(failed.turnId))).at(-1)).toEqual({
        type: "error",
        errorText: "first",
      });
      expect((await collect(chat.read(superseded.turnId))).at(-1)).toEqual({
        type: "error",
        errorText: "The turn was superseded by a new turn.",
      });
      // Writing is what an ended turn refuses.
      expect(codeOf(() => superseded.write({ type: "text-start", id: "t" }))).toBe("chat/closed");
    });
  });

  it("runs the README's answer loop to the end when a newer turn supersedes it mid-answer", async () => {
    await inFixture(async ({ chat }) => {
      let supersede = () => {};
      const model = {
        async *toUIMessageStream(): AsyncGenerator<ChatUIMessageChunk> {
          yield { type: "text-start", id: "t" };
          await sleep(5);
          supersede(); // the user sent the next message
          yield { type: "text-delta", id: "t", delta: "too late" };
          yield { type: "text-end", id: "t" };
        },
      };
      const turn = chat.startTurn("loop");
      supersede = () => chat.startTurn("loop");
      // Verbatim from the README's startAnswer:
      const work = (async () => {
        try {
          for await (const chunk of model.toUIMessageStream()) turn.write(chunk);
          turn.finish();
        } catch (error) {
          turn.fail(String(error));
        }
      })();
      await expect(work).resolves.toBeUndefined();
      expect(turn.streaming).toBe(false);
    });
  });
});

describe("ids", () => {
  it("constructs ChatTurns in an object whose name is longer than any chat id", async () => {
    const stub = freshStub("n".repeat(300));
    await inFixture(async (fixture, state) => {
      expect(state.id.name?.length).toBeGreaterThan(300);
      const turns = new ChatTurns(anotherInstance(state), { streams: fixture.streams });
      expect(turns.startTurn("c1").streaming).toBe(true);
    }, stub);
  });

  it("refuses a chat, turn or message id with a lone surrogate with chat/invalid-argument", async () => {
    await inFixture(async ({ chat }) => {
      for (const bad of BAD_NAMES) {
        expect(codeOf(() => chat.startTurn(bad as string))).toBe("chat/invalid-argument");
        expect(codeOf(() => chat.activeTurn(bad as string))).toBe("chat/invalid-argument");
        expect(codeOf(() => chat.resumeResponse(bad as string))).toBe("chat/invalid-argument");
        expect(codeOf(() => chat.adoptTurn(bad as string))).toBe("chat/invalid-argument");
      }
      for (const bad of ["a\uD800b", "\uDC00", "", 7]) {
        expect(codeOf(() => chat.startTurn("c1", { turnId: bad as string }))).toBe(
          "chat/invalid-argument",
        );
        expect(codeOf(() => chat.startTurn("c1", { messageId: bad as string }))).toBe(
          "chat/invalid-argument",
        );
      }
      expect(chat.activeTurn("c1")).toBeNull(); // nothing was written
      expect(codeOf(() => chat.startTurn("c1", { turnId: "t".repeat(201) }))).toBe(
        "chat/invalid-argument",
      );
      expect(codeOf(() => chat.startTurn("c1", { messageId: "m".repeat(257) }))).toBe(
        "chat/invalid-argument",
      );
      const longest = chat.startTurn("c".repeat(240), {
        turnId: "t".repeat(200),
        messageId: "m".repeat(256),
      });
      expect(chat.activeTurn("c".repeat(240))).toMatchObject({
        turnId: longest.turnId,
        messageId: "m".repeat(256),
      });
    });
  });
});

describe("reclaimOnNextTurn", () => {
  it("keeps at most a chat's newest ended turn and its active one, in under 60 KiB of growth over 20 turns", async () => {
    await inFixture(async (fixture, state) => {
      const chat = new ChatTurns(anotherInstance(state), {
        streams: fixture.streams,
        reclaimOnNextTurn: true,
      });
      const script = scriptedChunks(96);
      const sizeBefore = state.storage.sql.databaseSize;
      for (let t = 0; t < 20; t++) {
        const turn = chat.startTurn("one-chat");
        expect(fixture.streams.list({ tag: "dk-chat/one-chat" }).items.length).toBeLessThanOrEqual(
          2,
        );
        for (const chunk of script) turn.write(chunk);
        turn.finish();
      }
      expect(fixture.streams.list({ tag: "dk-chat/one-chat" }).items).toHaveLength(1);
      expect(state.storage.sql.databaseSize - sizeBefore).toBeLessThan(60 * 1024);
    });
  });

  it("deletes a chat's ended turns when its next turn starts, and keeps them without it", async () => {
    await inFixture(async (fixture, state) => {
      const reclaiming = new ChatTurns(anotherInstance(state), {
        streams: fixture.streams,
        reclaimOnNextTurn: true,
      });
      const first = reclaiming.startTurn("r");
      first.write({ type: "text-start", id: "t" });
      first.finish();
      const other = reclaiming.startTurn("other-chat");
      other.finish();
      const second = reclaiming.startTurn("r");
      expect(fixture.streams.status(`dk-chat/${first.turnId}`)).toBeNull();
      expect(fixture.streams.status(`dk-chat/${other.turnId}`)).not.toBeNull();
      second.finish();
      const keeping = fixture.chat;
      const kept = keeping.startTurn("k");
      kept.finish();
      keeping.startTurn("k").finish();
      expect(fixture.streams.status(`dk-chat/${kept.turnId}`)).toMatchObject({
        state: "completed",
      });
      expect(
        codeOf(
          () =>
            new ChatTurns(anotherInstance(state), {
              streams: fixture.streams,
              reclaimOnNextTurn: 1 as never,
            }),
        ),
      ).toBe("chat/invalid-argument");
    });
  });
});

describe("a client that goes away", () => {
  it("stops a resume of a turn in flight at once, while it waits on the turn's tail", async () => {
    await inFixture(async ({ chat, streams }) => {
      const turn = chat.startTurn("c1", { messageId: "m" });
      turn.write({ type: "text-start", id: "t" });
      const reader = (chat.resumeResponse("c1").body as ReadableStream<Uint8Array>).getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain('"text-start"');
      const next = reader.read(); // waits for the turn's next chunk
      await sleep(10);
      expect(streams.waitStats().readers).toBe(1); // parked on the tail
      await reader.cancel(); // resolves without another write
      expect((await next).done).toBe(true);
      await sleep(10);
      expect(streams.waitStats().readers).toBe(0);
      turn.finish();
    });
  });

  it("lets a POST response be cancelled while the model is quiet, and the turn goes on", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("c1", { messageId: "m" });
      const reader = (chat.turnResponse(turn).body as ReadableStream<Uint8Array>).getReader();
      turn.write({ type: "text-start", id: "t" });
      await reader.read();
      await reader.cancel(); // resolves with no further write
      turn.write({ type: "text-delta", id: "t", delta: "x" });
      turn.finish();
      expect(await collect(chat.read(turn.turnId))).toHaveLength(3);
    });
  });
});

describe("stop means stop, from any client", () => {
  it("ends the turn with one abort chunk for every reader, aborts its signal and ends the answer loop", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("s1", { messageId: "m" });
      const post = chat.turnResponse(turn);
      let modelStopped = false;
      const model = {
        async *toUIMessageStream(): AsyncGenerator<ChatUIMessageChunk> {
          yield { type: "text-start", id: "t" };
          for (let i = 0; ; i++) {
            if (turn.signal.aborted) {
              modelStopped = true;
              return;
            }
            yield { type: "text-delta", id: "t", delta: `${i} ` };
            await sleep(5);
          }
        },
      };
      const work = (async () => {
        try {
          for await (const chunk of model.toUIMessageStream()) turn.write(chunk);
          turn.finish();
        } catch (error) {
          turn.fail(String(error));
        }
      })();
      await sleep(30);
      const resumed = chat.resumeResponse("s1"); // another client, attached before the stop
      expect(chat.stopTurn("s1", "user")).toMatchObject({ turnId: turn.turnId, messageId: "m" });
      await work;
      expect(modelStopped).toBe(true);
      const end = [{ type: "abort", reason: "user" }, "[DONE]"];
      const postFrames = await frames(post);
      const resumedFrames = await frames(resumed);
      expect(postFrames.slice(-2)).toEqual(end);
      expect(resumedFrames.slice(-2)).toEqual(end);
      expect(postFrames.filter((f) => (f as ChatUIMessageChunk).type === "abort")).toHaveLength(1);
      expect(resumedFrames).toEqual(postFrames);
      expect(chat.activeTurn("s1")).toBeNull();
      expect(chat.stopTurn("s1")).toBeNull();
      turn.stop(); // a no-op on an ended turn
    });
  });

  it("stops a turn left by a restart on its stream, its start first", async () => {
    await inFixture(async (fixture, state) => {
      const before = new ChatTurns(anotherInstance(state), { streams: fixture.streams });
      const turn = before.startTurn("s2", { messageId: "m2" });
      turn.write({ type: "text-start", id: "t" }); // buffered only
      const after = new ChatTurns(anotherInstance(state), {
        streams: new Streams(anotherInstance(state)),
      });
      expect(after.stopTurn("s2")?.turnId).toBe(turn.turnId);
      expect(await collect(after.read(turn.turnId))).toEqual([
        { type: "start", messageId: "m2" },
        { type: "abort" },
      ]);
      expect(after.resumeResponse("s2").status).toBe(204);
    });
  });
});

describe("resume edges", () => {
  it("answers a client that reconnects before the first token with the in-flight turn, not 204", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("early", { messageId: "m-early" });
      const response = chat.resumeResponse("early");
      expect(response.status).toBe(200);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toBe(`data: ${JSON.stringify({ type: "start", messageId: "m-early" })}\n\n`);
      await reader.cancel();
      turn.finish();
    });
  });

  it("never hands a resuming client the previous, finished turn as if it were the new one", async () => {
    await inFixture(async ({ chat }) => {
      const first = chat.startTurn("next", { messageId: "m-first" });
      first.write({ type: "text-start", id: "t" });
      first.finish();
      expect(chat.resumeResponse("next").status).toBe(204); // nothing in flight
      const second = chat.startTurn("next", { messageId: "m-second" });
      const frames2 = chat.resumeResponse("next");
      const reader = (frames2.body as ReadableStream<Uint8Array>).getReader();
      const text = new TextDecoder().decode((await reader.read()).value);
      expect(text).toContain('"m-second"');
      expect(text).not.toContain('"m-first"');
      await reader.cancel();
      second.finish();
    });
  });
});

describe("turn ids", () => {
  it("refuses a turn id already used, live or ended, with chat/conflict and writes nothing", async () => {
    await inFixture(async ({ chat, streams }) => {
      const first = chat.startTurn("ids", { turnId: "t-1", messageId: "m-1" });
      expect(codeOf(() => chat.startTurn("ids", { turnId: "t-1" }))).toBe("chat/conflict");
      expect(first.streaming).toBe(true); // the live turn was not superseded by the refused one
      first.finish();
      expect(codeOf(() => chat.startTurn("ids", { turnId: "t-1" }))).toBe("chat/conflict");
      expect(streams.status("dk-chat/t-1")).toMatchObject({ state: "completed" });
      expect(chat.activeTurn("ids")).toBeNull();
    });
  });
});
