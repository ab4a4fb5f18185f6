import { evictDurableObject } from "cloudflare:test";
import { anotherInstance } from "@durablekit/test-kit";
import { describe, expect, it, vi } from "vitest";
import { isStreamsError, Streams, type StreamWriter } from "../src/index";
import { collect, freshStub, inFixture, settle } from "./helpers";

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("stream lifecycle", () => {
  it("reopens a live stream at its cursor and a settled one at its final cursor, refusing writes into it; a stale writer cannot append", async () => {
    await inFixture(({ streams }) => {
      const first = streams.open("s");
      first.append("a");
      first.append("b");
      const second = streams.open("s");
      expect(second.created).toBe(false);
      expect(second.cursor).toBe(2);
      expect(second.append("c")).toBe(2);
      expect(first.append("d")).toBe(3);

      second.close();
      // Opening a settled stream again is idempotent (a replayed handler goes on); writing is refused.
      const reopen = streams.open("s");
      expect(reopen).toMatchObject({ created: false, cursor: 4 });
      expect(thrown(() => reopen.append("late"))).toMatchObject({
        code: "streams/closed",
        state: "completed",
      });
      expect(reopen.close()).toMatchObject({ settled: false });
      expect(reopen.error("late")).toMatchObject({ settled: false });
      expect(streams.status("s")).toMatchObject({ state: "completed", cursor: 4 });
      expect(
        isStreamsError(
          thrown(() => first.append("e")),
          "streams/closed",
        ),
      ).toBe(true);

      // After delete, the id is free again; old writers never reach the new stream.
      expect(streams.delete("s")).toBe(true);
      const fresh = streams.open("s");
      expect(fresh.created).toBe(true);
      expect(fresh.cursor).toBe(0);
      expect(thrown(() => first.append("f"))).toMatchObject({
        code: "streams/closed",
        state: "deleted",
      });
      expect(first.close()).toMatchObject({ settled: false });
      expect(streams.status("s")).toMatchObject({ state: "streaming", cursor: 0 });
    });
  });

  it("refuses a reopen that changes tag, content type, encoding or TTL as a config conflict", async () => {
    await inFixture(({ streams }) => {
      streams.open("s", { tag: "turn-1", contentType: "text/plain", ttlMs: 60_000 });
      // Options left out, or equal (content types compare case-insensitively), reopen as is.
      expect(streams.open("s").cursor).toBe(0);
      expect(
        streams.open("s", { tag: "turn-1", contentType: "TEXT/PLAIN", ttlMs: 60_000 }).created,
      ).toBe(false);
      for (const options of [
        { tag: "turn-2" },
        { contentType: "application/json" },
        { encoding: "binary" as const },
        { ttlMs: 1000 },
        { expiresAt: Date.now() + 5000 },
      ]) {
        const error = thrown(() => streams.open("s", options));
        expect(isStreamsError(error, "streams/conflict")).toBe(true);
        expect((error as { field: string }).field).toBe(Object.keys(options)[0]);
      }
    });
  });

  it("deletes only settled streams unless forced, and a forced delete ends parked readers", async () => {
    await inFixture(async ({ streams }, state) => {
      expect(streams.delete("never")).toBe(false);
      const done = streams.open("done");
      done.append(1);
      done.close();
      expect(streams.delete("done")).toBe(true);
      expect(streams.status("done")).toBeNull();

      const live = streams.open("live");
      live.append(1);
      expect(
        isStreamsError(
          thrown(() => streams.delete("live")),
          "streams/delete-live",
        ),
      ).toBe(true);
      const tailing = collect(streams.read("live"));
      await settle();
      expect(streams.waitStats().readers).toBe(1);
      expect(streams.delete("live", { force: true })).toBe(true);
      expect((await tailing).map((c) => c.chunk)).toEqual([1]);
      expect(streams.waitStats()).toEqual({ streams: 0, readers: 0 });
      const left = state.storage.sql
        .exec<{ n: number }>("SELECT COUNT(*) AS n FROM dk_streams_chunks")
        .one().n;
      expect(left).toBe(0);
    });
  });

  it("lists streams newest first by state and tag, a page at a time", async () => {
    await inFixture(({ streams }) => {
      streams.open("a", { tag: "op-1" }).close();
      streams.open("b", { tag: "op-1" });
      streams.open("c", { tag: "op-2" }).error("x");
      streams.open("d");
      streams.open("e", { tag: "op-1" });
      const ids = (list: { items: { streamId: string }[] }) => list.items.map((s) => s.streamId);
      expect(ids(streams.list())).toEqual(["e", "d", "c", "b", "a"]);
      expect(ids(streams.list({ tag: "op-1" }))).toEqual(["e", "b", "a"]);
      expect(ids(streams.list({ tag: "op-1", limit: 1 }))).toEqual(["e"]);
      expect(ids(streams.list({ state: "streaming" }))).toEqual(["e", "d", "b"]);
      expect(ids(streams.list({ state: ["completed", "errored"] }))).toEqual(["c", "a"]);
      expect(ids(streams.list({ tag: "op-1", state: "completed" }))).toEqual(["a"]);

      const pages: string[][] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = streams.list({ limit: 2, ...(cursor ? { cursor } : {}) });
        pages.push(ids(page));
        if (page.next === null) break;
        cursor = page.next;
      }
      expect(pages).toEqual([["e", "d"], ["c", "b"], ["a"]]);
      expect(streams.list({ tag: "op-1" }).items[0]).toMatchObject({
        tag: "op-1",
        state: "streaming",
      });
    });
  });

  it("emits typed lifecycle events, coalescing appends", async () => {
    await inFixture(async (fixture) => {
      const { streams, events } = fixture;
      const writer = streams.open("s", { tag: "t" });
      writer.append(0);
      writer.append(1);
      writer.append(2);
      await settle();
      writer.append(3);
      writer.close();
      streams.delete("s");
      const other = streams.open("o");
      other.error("boom");
      streams.delete("o");
      expect(events).toEqual([
        { type: "stream:opened", streamId: "s", tag: "t" },
        { type: "stream:appended", streamId: "s", firstSeq: 0, lastSeq: 2, count: 3 },
        { type: "stream:appended", streamId: "s", firstSeq: 3, lastSeq: 3, count: 1 },
        { type: "stream:closed", streamId: "s", cursor: 4 },
        { type: "stream:deleted", streamId: "s", forced: false },
        { type: "stream:opened", streamId: "o" },
        { type: "stream:errored", streamId: "o", cursor: 0, reason: "boom" },
        { type: "stream:deleted", streamId: "o", forced: false },
      ]);
    });
  });

  it("keeps chunks and the cursor across evictDurableObject", async () => {
    const stub = freshStub("evict");
    await inFixture(({ streams }) => {
      const writer = streams.open("s", { metadata: { owner: "turn-7" } });
      for (let i = 0; i < 3; i++) writer.append({ i });
    }, stub);
    await evictDurableObject(stub);
    await inFixture(async ({ streams }) => {
      expect(streams.status("s")).toMatchObject({
        state: "streaming",
        cursor: 3,
        metadata: { owner: "turn-7" },
      });
      const writer: StreamWriter = streams.open("s");
      expect(writer.created).toBe(false);
      expect(writer.cursor).toBe(3);
      expect(writer.append({ i: 3 })).toBe(3);
      writer.close();
    }, stub);
    await evictDurableObject(stub);
    await inFixture(async ({ streams }) => {
      expect((await collect(streams.read("s"))).map((c) => c.chunk)).toEqual([
        { i: 0 },
        { i: 1 },
        { i: 2 },
        { i: 3 },
      ]);
      expect(streams.status("s")).toMatchObject({ state: "completed", cursor: 4 });
    }, stub);
  });

  it("validates ids and options with argument errors", async () => {
    await inFixture(({ streams }) => {
      for (const attempt of [
        () => streams.open(""),
        () => streams.open("x".repeat(257)),
        () => streams.open("s", { ttlMs: 0 }),
        () => streams.open("s", { encoding: "xml" as never }),
        () => streams.open("s", { producer: { id: "", epoch: 0 } }),
        () => streams.open("s", { producer: { id: "p", epoch: -1 } }),
        () => streams.list({ limit: 0 }),
        () => streams.list({ cursor: "abc" }),
      ]) {
        expect(isStreamsError(thrown(attempt), "streams/invalid-argument")).toBe(true);
      }
      expect(streams.status("s")).toBeNull();
    });
  });

  it("reports a throwing onEvent listener with console.warn and keeps the write", async () => {
    await inFixture(async (_fixture, state) => {
      const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
      try {
        const streams = new Streams(anotherInstance(state), {
          onEvent: () => {
            throw new Error("listener broke");
          },
        });
        const writer = streams.open("s");
        expect(writer.append("a")).toBe(0);
        writer.close();
        await settle();
        expect(streams.status("s")).toMatchObject({ state: "completed", cursor: 1 });
        expect(warn).toHaveBeenCalled();
        expect(String(warn.mock.calls[0]?.[0])).toMatch(/@durablekit\/streams/);
      } finally {
        warn.mockRestore();
      }
    });
  });
});
