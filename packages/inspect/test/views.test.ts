import { thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isInspectError } from "../src/index";
import { inFixture } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isInspectError);

function rowChanges(state: DurableObjectState): number {
  return state.storage.sql.databaseSize;
}

describe("the inspector's views", () => {
  it("shows streams newest first with counts by state, and a stream's chunks decoded by its encoding", async () => {
    await inFixture(async ({ streams, inspector }) => {
      const json = streams.open("orders", { tag: "shop" });
      json.append({ id: 1 });
      json.append({ id: 2 });
      json.close();
      const text = streams.open("log", { encoding: "text" });
      text.append("hello");
      const bytes = streams.open("blob", { encoding: "binary" });
      bytes.append(new Uint8Array([0, 255, 7]));
      bytes.error("disk on fire");

      const overview = inspector.overview();
      expect(overview).toMatchObject({
        version: 1,
        parts: ["tasks", "programs", "streams", "chat"],
        streams: { byState: { streaming: 1, completed: 1, errored: 1 }, complete: true },
      });
      expect(typeof overview.objectId).toBe("string");

      const page = inspector.streams();
      expect(page.items.map((s) => s.streamId)).toEqual(["blob", "log", "orders"]);
      expect(page.items[2]).toMatchObject({
        state: "completed",
        cursor: 2,
        tag: "shop",
        encoding: "json",
        error: null,
      });
      expect(inspector.streams({ state: "errored" }).items.map((s) => s.streamId)).toEqual([
        "blob",
      ]);
      expect(inspector.streams({ tag: "shop" }).items.map((s) => s.streamId)).toEqual(["orders"]);

      expect(inspector.stream("orders")).toMatchObject({
        version: 1,
        chunks: [
          { seq: 0, value: { id: 1 } },
          { seq: 1, value: { id: 2 } },
        ],
        next: 2,
        upToDate: true,
      });
      expect(inspector.stream("log")?.chunks).toEqual([{ seq: 0, value: "hello" }]);
      expect(inspector.stream("blob")).toMatchObject({
        stream: { state: "errored", error: "disk on fire" },
        chunks: [{ seq: 0, value: "AP8H" }],
      });
      expect(inspector.stream("orders", { from: 1, limit: 1 })?.chunks).toEqual([
        { seq: 1, value: { id: 2 } },
      ]);
      expect(inspector.stream("nope")).toBeNull();
    });
  });

  it("pages streams with the next token", async () => {
    await inFixture(async ({ streams, inspector }) => {
      for (let i = 0; i < 5; i++) streams.open(`s${i}`).close();
      const first = inspector.streams({ limit: 2 });
      expect(first.items.map((s) => s.streamId)).toEqual(["s4", "s3"]);
      const second = inspector.streams({ limit: 2, cursor: first.next ?? undefined });
      const third = inspector.streams({ limit: 2, cursor: second.next ?? undefined });
      expect([...second.items, ...third.items].map((s) => s.streamId)).toEqual(["s2", "s1", "s0"]);
      expect(third.next).toBeNull();
    });
  });

  it("shows a chat's turns and what a turn stored", async () => {
    await inFixture(async ({ chat, inspector }) => {
      const done = chat.startTurn("c1", { messageId: "m-1" });
      done.write({ type: "text-start", id: "t" });
      done.write({ type: "text-delta", id: "t", delta: "hi" });
      done.finish();
      const open = chat.startTurn("c1", { messageId: "m-2" });
      open.write({ type: "text-start", id: "t" });

      const turns = inspector.chatTurns("c1");
      expect(turns.items.map((t) => [t.messageId, t.state, t.live])).toEqual([
        ["m-2", "streaming", true],
        ["m-1", "completed", false],
      ]);
      const view = inspector.chatTurn(done.turnId);
      expect(view).toMatchObject({ version: 1, turn: { chatId: "c1", messageId: "m-1" } });
      expect(view?.chunks).toEqual([
        { type: "start", messageId: "m-1" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "hi" },
      ]);
      expect(view?.storedCount).toBe(3);
      expect(inspector.chatTurn(done.turnId, { limit: 2 })?.chunks).toHaveLength(2);
      expect(inspector.chatTurn("no-such-turn")).toBeNull();
      open.finish();
    });
  });

  it("writes nothing: the database is the same size after every view", async () => {
    await inFixture(async ({ streams, chat, tasks, executor, inspector }, state) => {
      const { PROGRAM } = await import("./fixtures/worker");
      // A run that journals nothing: reading its calls must not create the journal's tables.
      await executor.execute(PROGRAM, { name: "x" }, { id: "plain", onInterrupt: "fail" });
      streams.open("a").append({ x: 1 });
      const turn = chat.startTurn("c1");
      turn.finish();
      const { runId } = await tasks.run("doomed@v1", { reason: "r" });
      const before = rowChanges(state);
      let written = 0;
      const sql = state.storage.sql;
      const exec = sql.exec.bind(sql);
      sql.exec = ((query: string, ...bindings: unknown[]) => {
        const cursor = exec(query, ...bindings);
        if (!/^\s*SELECT/i.test(query)) written += 1;
        return cursor;
      }) as typeof sql.exec;
      try {
        inspector.overview();
        inspector.streams();
        inspector.stream("a");
        inspector.chatTurns("c1");
        inspector.chatTurn(turn.turnId);
        inspector.runs();
        inspector.run(runId);
        inspector.execution("none");
        expect(inspector.execution("plain")?.calls).toEqual([]);
      } finally {
        sql.exec = exec as typeof sql.exec;
      }
      expect(written).toBe(0);
      expect(rowChanges(state)).toBe(before);
    });
  });

  it("refuses bad input with inspect/invalid-argument and reads nothing", async () => {
    await inFixture(async ({ inspector }) => {
      expect(codeOf(() => inspector.streams({ limit: 0 }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.streams({ limit: 1001 }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.streams({ state: "done" as never }))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => inspector.streams({ cursor: "not-a-token" }))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => inspector.streams({ tag: "" }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.stream(""))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.stream("a", { from: -1 }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.stream("a", { limit: 1.5 }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.chatTurns("x".repeat(300)))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.chatTurn("a\uD800"))).toBe("inspect/invalid-argument");
    });
  });
});
