import { Streams } from "@durablekit/streams";
import { anotherInstance, withOverrides } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { ChatTurns, type ChatUIMessageChunk } from "../src/index";
import { frames, inFixture } from "./helpers";

const OLD_METADATA = `CREATE TABLE cf_ai_chat_stream_metadata (
  id text primary key, request_id text not null, status text not null,
  created_at integer not null, completed_at integer)`;
const NEW_METADATA = `CREATE TABLE cf_ai_chat_stream_metadata (
  id text primary key, request_id text not null, status text not null,
  created_at integer not null, completed_at integer, message_id text, is_continuation integer)`;
const CHUNKS = `CREATE TABLE cf_ai_chat_stream_chunks (
  id text primary key, stream_id text not null, body text not null,
  chunk_index integer not null, created_at integer not null)`;

/** Lays down the legacy tables with one finished and one in-flight stream. */
function seedLegacy(sql: SqlStorage, withMessageId: boolean, t0: number): void {
  sql.exec(withMessageId ? NEW_METADATA : OLD_METADATA);
  sql.exec(CHUNKS);
  sql.exec(
    "CREATE INDEX idx_stream_chunks_stream_id ON cf_ai_chat_stream_chunks(stream_id, chunk_index)",
  );
  if (withMessageId) {
    sql.exec(
      "INSERT INTO cf_ai_chat_stream_metadata VALUES ('old', 'req-old', 'completed', ?, ?, 'msg-old', 0)",
      t0 - 60_000,
      t0 - 59_000,
    );
    sql.exec(
      "INSERT INTO cf_ai_chat_stream_metadata VALUES ('live', 'req-live', 'streaming', ?, NULL, 'msg-live', 1)",
      t0 - 2_000,
    );
  } else {
    sql.exec(
      "INSERT INTO cf_ai_chat_stream_metadata VALUES ('old', 'req-old', 'completed', ?, ?)",
      t0 - 60_000,
      t0 - 59_000,
    );
    sql.exec(
      "INSERT INTO cf_ai_chat_stream_metadata VALUES ('live', 'req-live', 'streaming', ?, NULL)",
      t0 - 2_000,
    );
  }
  const bodies = [
    { type: "start", messageId: "msg-live" },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "hel" },
  ];
  bodies.forEach((body, index) => {
    sql.exec(
      "INSERT INTO cf_ai_chat_stream_chunks VALUES (?, 'live', ?, ?, ?)",
      `live-${index}`,
      JSON.stringify(body),
      index,
      t0 - 1_000 + index,
    );
  });
  sql.exec(
    "INSERT INTO cf_ai_chat_stream_chunks VALUES ('old-0', 'old', ?, 0, ?)",
    JSON.stringify({ type: "start", messageId: "msg-old" }),
    t0 - 59_500,
  );
}

async function collect(iterable: AsyncIterable<ChatUIMessageChunk>): Promise<ChatUIMessageChunk[]> {
  const out: ChatUIMessageChunk[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

function tables(sql: SqlStorage): string[] {
  return sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE name LIKE 'cf_ai_chat_stream%'")
    .toArray()
    .map((row) => row.name);
}

for (const withMessageId of [false, true]) {
  const schema = withMessageId ? "with message_id and is_continuation" : "of the first release";
  describe(`legacy tables ${schema}`, () => {
    it("are imported with an in-flight stream keeping its id, chunks and last activity, then dropped", async () => {
      await inFixture(async (fixture, state) => {
        const t0 = Date.now();
        seedLegacy(state.storage.sql, withMessageId, t0);
        const { chat, streams, events } = fixture;
        expect(events).toEqual([{ type: "chat:legacy-imported", turns: 2 }]);
        expect(tables(state.storage.sql)).toEqual([]);
        const active = chat.activeTurn("legacy-chat");
        expect(active).toMatchObject({
          turnId: "live",
          // The id its replayed start chunk carries, whatever the legacy columns said.
          messageId: "msg-live",
          live: false,
          createdAt: t0 - 2_000,
          updatedAt: t0 - 1_000 + 2,
        });
        expect(streams.status("dk-chat/old")).toMatchObject({
          state: "completed",
          cursor: 1,
          closedAt: t0 - 59_000,
        });
        if (withMessageId) {
          expect(streams.status("dk-chat/live")?.metadata).toMatchObject({ isContinuation: 1 });
        }
        // The in-flight turn has no writer after the upgrade: resuming it replays what it had and
        // ends it as errored.
        const replay = await frames(chat.resumeResponse("legacy-chat"));
        expect(replay.slice(0, 3)).toEqual([
          { type: "start", messageId: "msg-live" },
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: "hel" },
        ]);
        expect(replay.slice(3)).toEqual([
          { type: "error", errorText: expect.any(String) },
          "[DONE]",
        ]);
      });
    });
  });
}

/** Lays down legacy tables of one finished turn whose rows are `bodies`. */
function seedRows(sql: SqlStorage, bodies: unknown[], t0: number): void {
  sql.exec(NEW_METADATA);
  sql.exec(CHUNKS);
  sql.exec(
    "INSERT INTO cf_ai_chat_stream_metadata VALUES ('big', 'req-big', 'completed', ?, ?, 'msg-big', 0)",
    t0 - 10_000,
    t0 - 9_000,
  );
  bodies.forEach((body, index) => {
    sql.exec(
      "INSERT INTO cf_ai_chat_stream_chunks VALUES (?, 'big', ?, ?, ?)",
      `big-${index}`,
      JSON.stringify(body),
      index,
      t0 - 9_500 + index,
    );
  });
}

describe("legacy turn ids", () => {
  it("reports for an imported legacy turn the messageId its replayed start chunk carries", async () => {
    await inFixture(async (fixture, state) => {
      seedLegacy(state.storage.sql, false, Date.now()); // no message_id column: the id was the turn's
      const chat = fixture.chat; // constructed now: imports the tables just laid down
      const active = chat.activeTurn("legacy-chat");
      const replay = await frames(chat.resumeResponse("legacy-chat"));
      expect(replay[0]).toEqual({ type: "start", messageId: "msg-live" });
      expect(active?.messageId).toBe("msg-live");
    });
  });
});

describe("legacy data never bricks an object", () => {
  it("imports a legacy chunk over the streams' maxChunkBytes, splitting a text delta into deltas of the same text", async () => {
    await inFixture(async (fixture, state) => {
      const text = `${"ab€😀".repeat(300_000)}z`; // 2.7 MB of UTF-8, over the 1 MiB chunk limit
      seedRows(
        state.storage.sql,
        [
          { type: "start", messageId: "msg-big" },
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: text },
          { type: "data-blob", data: "q".repeat(1_200_000) },
          { type: "text-end", id: "t" },
        ],
        Date.now(),
      );
      const { chat, streams, events } = fixture;
      expect(chat.activeTurn("legacy-chat")).toBeNull();
      const replay = await collect(chat.read("big"));
      expect(replay[0]).toEqual({ type: "start", messageId: "msg-big" });
      const deltas = replay.filter((chunk) => chunk.type === "text-delta");
      expect(deltas.length).toBeGreaterThanOrEqual(Math.ceil(2_700_001 / 65_536));
      expect(deltas.every((chunk) => chunk.id === "t")).toBe(true);
      expect(deltas.map((chunk) => chunk.delta).join("")).toBe(text);
      expect(replay.at(-1)).toEqual({ type: "text-end", id: "t" });
      expect(replay.some((chunk) => chunk.type === "data-blob")).toBe(false);
      expect(events).toEqual([
        {
          type: "chat:legacy-chunk-skipped",
          turnId: "big",
          chunkType: "data-blob",
          bytes: JSON.stringify({ type: "data-blob", data: "q".repeat(1_200_000) }).length,
        },
        { type: "chat:legacy-imported", turns: 1 },
      ]);
      expect(streams.status("dk-chat/big")).toMatchObject({ state: "completed" });
      expect(tables(state.storage.sql)).toEqual([]);
      // Every stored segment fits the turn's segment bound.
      const sizes = state.storage.sql
        .exec<{ n: number }>("SELECT length(CAST(body AS BLOB)) AS n FROM dk_streams_chunks")
        .toArray();
      for (const { n } of sizes) expect(n).toBeLessThanOrEqual(65_536);
    });
  });

  it("sets aside a legacy turn its streams refuse and starts with the others imported", async () => {
    await inFixture(async (_fixture, state) => {
      const t0 = Date.now();
      seedLegacy(state.storage.sql, true, t0);
      state.storage.sql.exec(
        "INSERT INTO cf_ai_chat_stream_metadata VALUES ('huge', 'req-huge', 'completed', ?, ?, 'msg-huge', 0)",
        t0 - 5_000,
        t0 - 4_000,
      );
      state.storage.sql.exec(
        "INSERT INTO cf_ai_chat_stream_chunks VALUES ('huge-0', 'huge', ?, 0, ?)",
        JSON.stringify([{ type: "text-delta", id: "t", delta: "w".repeat(5_000) }]),
        t0 - 4_500,
      );
      const events: { type: string }[] = [];
      // Segments of up to 64 KiB, over streams that take chunks of at most 1,000 bytes.
      const streams = new Streams(anotherInstance(state), { maxChunkBytes: 1_000 });
      const chat = new ChatTurns(anotherInstance(state), {
        streams,
        legacyChatId: "legacy-chat",
        onEvent: (event) => events.push(event),
      });
      expect(events.map((event) => event.type)).toEqual([
        "chat:legacy-turn-skipped",
        "chat:legacy-imported",
      ]);
      expect(events[0]).toMatchObject({ turnId: "huge", error: { code: "streams/too-large" } });
      expect(chat.activeTurn("legacy-chat")?.turnId).toBe("live");
      expect(streams.status("dk-chat/huge")).toBeNull();
      expect(tables(state.storage.sql)).toEqual([]);
    });
  });
});

describe("legacy import", () => {
  it("leaves the legacy tables and no turn behind when the import fails part-way", async () => {
    await inFixture(async (fixture, state) => {
      seedLegacy(state.storage.sql, true, Date.now());
      let calls = 0;
      // The second stream's import fails, as a crash in the middle of the migration would.
      const failing = withOverrides(fixture.streams, {
        importStream: (...args: Parameters<typeof fixture.streams.importStream>) => {
          calls += 1;
          if (calls === 2) throw new Error("storage failed mid-import");
          return fixture.streams.importStream(...args);
        },
      });
      expect(
        () =>
          new ChatTurns(anotherInstance(state), { streams: failing, legacyChatId: "legacy-chat" }),
      ).toThrow("storage failed mid-import");
      expect(tables(state.storage.sql).sort()).toEqual([
        "cf_ai_chat_stream_chunks",
        "cf_ai_chat_stream_metadata",
      ]);
      expect(fixture.streams.list({}).items).toEqual([]);
      // The next construction imports everything.
      expect(fixture.chat.activeTurn("legacy-chat")?.turnId).toBe("live");
      expect(tables(state.storage.sql)).toEqual([]);
    });
  });

  it("imports nothing twice when the import is run again", async () => {
    await inFixture(async (fixture, state) => {
      seedLegacy(state.storage.sql, true, Date.now());
      expect(fixture.chat.activeTurn("legacy-chat")?.turnId).toBe("live");
      // Tables laid down again (a partially applied older deploy): the existing turns are kept.
      seedLegacy(state.storage.sql, true, Date.now() - 10_000);
      const events: unknown[] = [];
      new ChatTurns(anotherInstance(state), {
        streams: fixture.streams,
        legacyChatId: "legacy-chat",
        onEvent: (event) => events.push(event),
      });
      expect(events).toEqual([{ type: "chat:legacy-imported", turns: 0 }]);
      expect(tables(state.storage.sql)).toEqual([]);
    });
  });
});
