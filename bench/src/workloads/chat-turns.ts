import { ChatHistory, ChatTurns } from "@durablekit/chat-adapter";
import { Streams } from "@durablekit/streams";
import { countingState } from "@durablekit/test-kit";
import { createChatStreams, ResumableStream } from "agents/chat";
import { Lifecycle } from "agents/lifecycle";
import { sampleChunk } from "../timing";
import type { Figures, MetricSpec, Workload, WorkloadContext } from "../workload";

const TURNS = 20;
const CHUNKS = 100;
/** How many times the last turn is replayed for the resume figure. */
const REPLAYS = 200;
const CHAT_ID = "chat";

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

const METRICS: MetricSpec[] = [
  {
    key: "rowChanges",
    label: "SQLite row changes (total_changes)",
    unit: "rows",
    better: "lower",
  },
  { key: "rowsWritten", label: "cursor rowsWritten", unit: "rows", better: "lower" },
  { key: "ms", label: "time to write all turns", unit: "ms", better: "lower" },
  {
    key: "growthKiB",
    label: "database growth over the turns (databaseSize)",
    unit: "KiB",
    better: "lower",
  },
  {
    key: "resumeMs",
    label: `resume read: a 100-chunk turn in flight replayed ${REPLAYS} times, to wire bytes`,
    unit: "ms",
    better: "lower",
  },
  { key: "resumeKiB", label: "wire bytes of one replay", unit: "KiB", better: "lower" },
];

/** Our side: one chat's 20 turns written and settled, then the last one replayed as the SSE body. */
async function runOurs({ ctx }: WorkloadContext, reclaimOnNextTurn: boolean): Promise<Figures> {
  const counting = countingState(ctx);
  const chat = new ChatTurns(counting.state, {
    streams: new Streams(counting.state),
    reclaimOnNextTurn,
  });
  const chunks = turnChunks();
  const before = totalChanges(ctx);
  const sizeBefore = ctx.storage.sql.databaseSize;
  counting.reset();
  const start = performance.now();
  for (let t = 0; t < TURNS; t++) {
    const turn = chat.startTurn(CHAT_ID);
    for (const chunk of chunks) turn.write(chunk);
    turn.finish();
  }
  const ms = performance.now() - start;
  const rowChanges = totalChanges(ctx) - before;
  const rowsWritten = counting.counts().rowsWritten;
  const growthKiB = (ctx.storage.sql.databaseSize - sizeBefore) / 1024;
  // A turn in flight, resumed through the route's response (`GET …/stream`): its stored chunks
  // arrive as `data:` frames; the reader stops once it holds them all, as a tailing client waits.
  const inFlight = chat.startTurn(CHAT_ID);
  for (const chunk of chunks) inFlight.write(chunk);
  inFlight.flush();
  let bytes = 0;
  const replayStart = performance.now();
  for (let r = 0; r < REPLAYS; r++) bytes = await replayedBytes(chat.resumeResponse(CHAT_ID));
  const resumeMs = performance.now() - replayStart;
  inFlight.finish();
  return { rowChanges, rowsWritten, ms, growthKiB, resumeMs, resumeKiB: bytes / 1024 };
}

/** Reads a resume response until it holds the turn's {@link CHUNKS} frames, then lets it go. */
async function replayedBytes(response: Response): Promise<number> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  while (text.split("\n\n").length <= CHUNKS) {
    const { done, value } = await reader.read();
    if (done) throw new Error("the resume ended before the turn's chunks arrived");
    bytes += value.byteLength;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return bytes;
}

/** agents' side: the same turns through `ResumableStream`, the last one replayed to a connection. */
async function runAgents({ ctx, env }: WorkloadContext): Promise<Figures> {
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
  const sizeBefore = ctx.storage.sql.databaseSize;
  counting.reset();
  const start = performance.now();
  for (let t = 0; t < TURNS; t++) {
    const id = resumable.start(`req-${t}`, { messageId: `m-${t}` });
    for (const body of bodies) resumable.storeChunk(id, body);
    resumable.complete(id);
  }
  const ms = performance.now() - start;
  const rowChanges = totalChanges(ctx) - before;
  const rowsWritten = counting.counts().rowsWritten;
  const growthKiB = (ctx.storage.sql.databaseSize - sizeBefore) / 1024;
  // A turn in flight, replayed to a WebSocket connection as its resume handshake does, collected
  // as the strings it sends.
  const inFlight = resumable.start("req-live", { messageId: "m-live" });
  for (const body of bodies) resumable.storeChunk(inFlight, body);
  resumable.flushBuffer();
  let bytes = 0;
  let frames = 0;
  const replayStart = performance.now();
  for (let r = 0; r < REPLAYS; r++) {
    const sent: string[] = [];
    const connection = { id: "c", send: (frame: string) => sent.push(frame) };
    resumable.replayChunks(connection as never, "req-live");
    frames = sent.length;
    bytes = new TextEncoder().encode(sent.join("")).byteLength;
  }
  const resumeMs = performance.now() - replayStart;
  resumable.complete(inFlight);
  // Its replay sends every stored chunk plus a closing frame; anything else is not the same work.
  if (frames !== CHUNKS + 1) throw new Error(`agents replayed ${frames} frames, not ${CHUNKS + 1}`);
  return { rowChanges, rowsWritten, ms, growthKiB, resumeMs, resumeKiB: bytes / 1024 };
}

/**
 * Chat turns: one chat's 20 turns of 100 UI message chunks of ~120 bytes written and settled,
 * counted as SQLite row changes (`total_changes()`) and by the cursors' `rowsWritten` (which counts
 * index entries), the time to write them, the database's growth, and the time to replay the last
 * turn in flight as a resuming client receives it (our SSE body; agents' WebSocket frames).
 */
export const chatTurns: Workload = {
  name: "chat-turns",
  title: `${TURNS} turns of one chat × ${CHUNKS} UI message chunks of ~120 B, written and settled, then a turn in flight resumed`,
  metrics: METRICS,
  ours: { name: "@durablekit/chat-adapter", run: (context) => runOurs(context, false) },
  anchor: { name: "agents@0.32.0 chat ResumableStream", run: runAgents },
};

/** The same turns with `reclaimOnNextTurn`: each new turn deletes the chat's ended ones, as agents does. */
export const chatTurnsReclaim: Workload = {
  name: "chat-turns-reclaim",
  title: `${TURNS} turns of one chat × ${CHUNKS} chunks with reclaimOnNextTurn (ended turns deleted when the next starts)`,
  metrics: METRICS,
  ours: {
    name: "@durablekit/chat-adapter (reclaimOnNextTurn)",
    run: (context) => runOurs(context, true),
  },
  anchor: { name: "agents@0.32.0 chat ResumableStream", run: runAgents },
};

const HISTORY_METRICS: MetricSpec[] = [
  {
    key: "rowChanges",
    label: "SQLite row changes (total_changes), turns and history",
    unit: "rows",
    better: "lower",
  },
  {
    key: "historyRowChanges",
    label: "of which the history's (beside the turns' own)",
    unit: "rows",
    better: "lower",
  },
  {
    key: "rowsWritten",
    label: "cursor rowsWritten, turns and history",
    unit: "rows",
    better: "lower",
  },
  {
    key: "ms",
    label: "time for all turns, requests validated, answers remembered",
    unit: "ms",
    better: "lower",
  },
];

/**
 * The same 20 turns through `ChatHistory`: each turn starts from the AI SDK's request (the whole
 * conversation so far, validated), its answer is remembered when it ends. The turns' own rows are
 * measured first in the same object (the plain `chat-turns` workload), so the history's are the
 * difference.
 */
async function runHistory({ ctx }: WorkloadContext): Promise<Figures> {
  const counting = countingState(ctx);
  const streams = new Streams(counting.state);
  const chat = new ChatTurns(counting.state, { streams });
  const history = new ChatHistory(counting.state, { chat });
  const chunks = turnChunks();
  let before = totalChanges(ctx);
  for (let t = 0; t < TURNS; t++) {
    const turn = chat.startTurn("plain");
    for (const chunk of chunks) turn.write(chunk);
    turn.finish();
  }
  const turnsOnly = totalChanges(ctx) - before;
  const conversation: unknown[] = [];
  before = totalChanges(ctx);
  counting.reset();
  const start = performance.now();
  for (let t = 0; t < TURNS; t++) {
    conversation.push({
      id: `u${t}`,
      role: "user",
      parts: [{ type: "text", text: `question ${t}` }],
    });
    const { turn } = await history.startTurn(CHAT_ID, {
      messages: conversation,
      trigger: "submit-message",
    });
    for (const chunk of chunks) turn.write(chunk);
    turn.finish();
    const entry = await history.rememberTurn(turn.turnId);
    conversation.push(entry?.message);
  }
  const ms = performance.now() - start;
  const rowChanges = totalChanges(ctx) - before;
  return {
    rowChanges,
    historyRowChanges: rowChanges - turnsOnly,
    rowsWritten: counting.counts().rowsWritten,
    ms,
  };
}

/** Chat turns with the server's message history beside them: what the history adds per turn. */
export const chatHistory: Workload = {
  name: "chat-turns-history",
  title: `${TURNS} turns of one chat × ${CHUNKS} chunks through ChatHistory (request validated, answer remembered)`,
  metrics: HISTORY_METRICS,
  ours: { name: "@durablekit/chat-adapter ChatTurns + ChatHistory", run: runHistory },
};
