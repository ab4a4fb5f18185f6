import { Streams } from "@durablekit/streams";
import { countingState } from "@durablekit/test-kit";
import { perSecond } from "../timing";
import type { Workload } from "../workload";
import { ANCHOR_NAME, chunks, startAnchor } from "./streams-shared";

const COUNT = 10_000;
const PASSES = 5;

interface Replayable {
  readBatches(id: string): AsyncIterable<unknown[]>;
  read(id: string): AsyncIterable<unknown>;
}

/**
 * Times a batched and an item-by-item replay of a settled stream, each `PASSES` times after one
 * warm-up replay (several passes, because one replay takes only a few milliseconds).
 */
async function replay(
  streams: Replayable,
  id: string,
): Promise<{ batchesMs: number; itemsMs: number }> {
  let seen = 0;
  for await (const batch of streams.readBatches("warm-up")) seen += batch.length;
  let start = performance.now();
  for (let pass = 0; pass < PASSES; pass++) {
    for await (const batch of streams.readBatches(id)) seen += batch.length;
  }
  const batchesMs = (performance.now() - start) / PASSES;
  start = performance.now();
  for (let pass = 0; pass < PASSES; pass++) {
    for await (const _chunk of streams.read(id)) seen += 1;
  }
  const itemsMs = (performance.now() - start) / PASSES;
  const expected = 1_000 + 2 * PASSES * COUNT;
  if (seen !== expected) throw new Error(`replayed ${seen} chunks, expected ${expected}`);
  return { batchesMs, itemsMs };
}

/** Replaying a settled 10,000-chunk stream: batched (100 per batch) and one chunk at a time (mean of 5 passes). */
export const streamsReplay: Workload = {
  name: "streams-replay",
  title: `replay a settled stream of ${COUNT.toLocaleString("en")} ~120-byte JSON chunks`,
  metrics: [
    {
      key: "batchesPerSec",
      label: "replay, readBatches (100 per batch)",
      unit: "chunks/s",
      better: "higher",
    },
    {
      key: "itemsPerSec",
      label: "replay, read() one chunk at a time",
      unit: "chunks/s",
      better: "higher",
    },
    {
      key: "rowsReadPerChunk",
      label: "rows read per replayed chunk (cursor rowsRead)",
      unit: "rows",
      better: "lower",
    },
  ],
  ours: {
    name: "@durablekit/streams",
    async run({ ctx }) {
      const data = chunks(COUNT);
      const streams = new Streams(ctx);
      streams.open("warm-up").close({ chunks: data.slice(0, 1_000) });
      streams.open("log").close({ chunks: data });
      const { batchesMs, itemsMs } = await replay(streams, "log");
      const counting = countingState(ctx);
      const counted = new Streams(counting.state);
      counted.status("log");
      const before = counting.counts().rowsRead;
      for await (const _batch of counted.readBatches("log"));
      return {
        batchesPerSec: perSecond(COUNT, batchesMs),
        itemsPerSec: perSecond(COUNT, itemsMs),
        rowsReadPerChunk: (counting.counts().rowsRead - before) / COUNT,
      };
    },
  },
  anchor: {
    name: ANCHOR_NAME,
    async run({ ctx, env }) {
      const data = chunks(COUNT);
      const streams = await startAnchor(ctx, env);
      const warm = await streams.open("warm-up");
      for (let i = 0; i < 1_000; i++) warm.append(data[i]!);
      warm.close();
      const log = await streams.open("log");
      for (const chunk of data) log.append(chunk);
      log.close();
      const { batchesMs, itemsMs } = await replay(streams, "log");
      const counting = countingState(ctx);
      const counted = await startAnchor(counting.state, env);
      const before = counting.counts().rowsRead;
      for await (const _batch of counted.readBatches("log"));
      return {
        batchesPerSec: perSecond(COUNT, batchesMs),
        itemsPerSec: perSecond(COUNT, itemsMs),
        rowsReadPerChunk: (counting.counts().rowsRead - before) / COUNT,
      };
    },
  },
};
