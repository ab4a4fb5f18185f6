import { withOverrides } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { ChatTurns } from "../src/index";
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
          messageId: withMessageId ? "msg-live" : "live",
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
      expect(() => new ChatTurns(state, { streams: failing, legacyChatId: "legacy-chat" })).toThrow(
        "storage failed mid-import",
      );
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
      new ChatTurns(state, {
        streams: fixture.streams,
        legacyChatId: "legacy-chat",
        onEvent: (event) => events.push(event),
      });
      expect(events).toEqual([{ type: "chat:legacy-imported", turns: 0 }]);
      expect(tables(state.storage.sql)).toEqual([]);
    });
  });
});
