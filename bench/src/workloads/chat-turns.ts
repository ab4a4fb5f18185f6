import { ChatTurns } from "@durablekit/chat-adapter";
import { Streams } from "@durablekit/streams";
import { countingState } from "@durablekit/test-kit";
import { createChatStreams, ResumableStream } from "agents/chat";
import { Lifecycle } from "agents/lifecycle";
import { sampleChunk } from "../timing";
import type { Workload } from "../workload";

const TURNS = 20;
const CHUNKS = 100;

/** The wire chunks of one turn: ~120-byte text deltas (the adapter's own `start` makes it 100). */
function turnChunks(): { type: string; id: string; delta: string }[] {
  return Array.from({ length: CHUNKS - 1 }, (_, i) => ({
    type: "text-delta",
    id: "t",
    delta: sampleChunk(i, 80).text,
  }));
}

/** SQLite row changes so far on the object's connection. */
function totalChanges(ctx: DurableObjectState): number {
  return ctx.storage.sql.exec<{ n: number }>("SELECT total_changes() AS n").one().n;
}

/**
 * Chat turns: 20 turns of 100 UI message chunks of ~120 bytes written and settled, counted as
 * SQLite row changes (`total_changes()`) and by the cursors' `rowsWritten` (which counts index
 * entries), and the time to write them.
 */
export const chatTurns: Workload = {
  name: "chat-turns",
  title: `${TURNS} chat turns × ${CHUNKS} UI message chunks of ~120 B, written and settled`,
  metrics: [
    {
      key: "rowChanges",
      label: "SQLite row changes (total_changes)",
      unit: "rows",
      better: "lower",
    },
    { key: "rowsWritten", label: "cursor rowsWritten", unit: "rows", better: "lower" },
    { key: "ms", label: "time for all turns", unit: "ms", better: "lower" },
  ],
  ours: {
    name: "@durablekit/chat-adapter",
    run({ ctx }) {
      const counting = countingState(ctx);
      const chat = new ChatTurns(counting.state, { streams: new Streams(counting.state) });
      const chunks = turnChunks();
      const before = totalChanges(ctx);
      counting.reset();
      const start = performance.now();
      for (let t = 0; t < TURNS; t++) {
        const turn = chat.startTurn(`chat-${t}`);
        for (const chunk of chunks) turn.write(chunk);
        turn.finish();
      }
      const ms = performance.now() - start;
      return {
        rowChanges: totalChanges(ctx) - before,
        rowsWritten: counting.counts().rowsWritten,
        ms,
      };
    },
  },
  anchor: {
    name: "agents@0.32.0 chat ResumableStream",
    async run({ ctx, env }) {
      const counting = countingState(ctx);
      const lifecycle = new Lifecycle({ ctx: counting.state, env } as never);
      const streams = createChatStreams();
      lifecycle.use(streams);
      await lifecycle.start();
      const sql = <T>(strings: TemplateStringsArray, ...values: unknown[]): T[] =>
        counting.state.storage.sql.exec(strings.join("?"), ...values).toArray() as T[];
      const resumable = new ResumableStream(streams, sql as never);
      const bodies = [
        JSON.stringify({ type: "start", messageId: "m" }),
        ...turnChunks().map((chunk) => JSON.stringify(chunk)),
      ];
      const before = totalChanges(ctx);
      counting.reset();
      const start = performance.now();
      for (let t = 0; t < TURNS; t++) {
        const id = resumable.start(`req-${t}`, { messageId: `m-${t}` });
        for (const body of bodies) resumable.storeChunk(id, body);
        resumable.complete(id);
      }
      const ms = performance.now() - start;
      return {
        rowChanges: totalChanges(ctx) - before,
        rowsWritten: counting.counts().rowsWritten,
        ms,
      };
    },
  },
};
