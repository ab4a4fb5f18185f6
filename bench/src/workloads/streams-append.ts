import { Streams } from "@durablekit/streams";
import { countingState } from "@durablekit/test-kit";
import { perSecond } from "../timing";
import type { Figures, Workload } from "../workload";
import { ANCHOR_NAME, chunks, rawInsertFloor, startAnchor } from "./streams-shared";

const SMALL = 1_000;
const LARGE = 10_000;
const WARM_UP = 2_000;

/** The figures both sides report, from their appends and the floor measured in the same object. */
function figures(
  ms1k: number,
  ms10k: number,
  floorMs: number,
  rowsWritten: number,
  payloadBytes: number,
  dbBytes: number,
): Figures {
  const us1k = (ms1k * 1000) / SMALL;
  const us10k = (ms10k * 1000) / LARGE;
  return {
    perSec1k: perSecond(SMALL, ms1k),
    perSec10k: perSecond(LARGE, ms10k),
    us1k,
    us10k,
    growth: us10k / us1k,
    rowsPerAppend: rowsWritten / LARGE,
    payloadBytesPerAppend: payloadBytes / LARGE,
    dbBytesPerAppend: dbBytes / LARGE,
    floorPerSec: perSecond(LARGE, floorMs),
    vsFloor: ms10k / floorMs,
  };
}

/**
 * Appending ~120-byte JSON chunks to one stream: throughput at 1,000 and 10,000 chunks, how the
 * per-append cost grows with the stream, rows and bytes written per append, and the raw SQLite
 * insert floor in the same object.
 */
export const streamsAppend: Workload = {
  name: "streams-append",
  title: `append ~120-byte JSON chunks: ${SMALL.toLocaleString("en")} and ${LARGE.toLocaleString("en")} per stream, vs raw inserts in the same object`,
  metrics: [
    {
      key: "perSec1k",
      label: `append throughput, ${SMALL.toLocaleString("en")}-chunk stream`,
      unit: "chunks/s",
      better: "higher",
    },
    {
      key: "perSec10k",
      label: `append throughput, ${LARGE.toLocaleString("en")}-chunk stream`,
      unit: "chunks/s",
      better: "higher",
    },
    {
      key: "us1k",
      label: `per append, ${SMALL.toLocaleString("en")}-chunk stream`,
      unit: "µs",
      better: "lower",
    },
    {
      key: "us10k",
      label: `per append, ${LARGE.toLocaleString("en")}-chunk stream`,
      unit: "µs",
      better: "lower",
    },
    { key: "growth", label: "per-append cost growth, 10k ÷ 1k stream", unit: "×", better: "lower" },
    {
      key: "rowsPerAppend",
      label: "rows written per append (cursor rowsWritten)",
      unit: "rows",
      better: "lower",
    },
    {
      key: "payloadBytesPerAppend",
      label: "row payload bytes written per append",
      unit: "bytes",
      better: "lower",
    },
    {
      key: "dbBytesPerAppend",
      label: "database growth per append",
      unit: "bytes",
      better: "lower",
    },
    {
      key: "floorPerSec",
      label: "raw SQLite insert floor, same object",
      unit: "inserts/s",
      better: "higher",
    },
    {
      key: "vsFloor",
      label: `${LARGE.toLocaleString("en")} appends ÷ ${LARGE.toLocaleString("en")} raw inserts (time)`,
      unit: "×",
      better: "lower",
    },
  ],
  ours: {
    name: "@durablekit/streams",
    run({ ctx }) {
      const data = chunks(LARGE);
      const streams = new Streams(ctx);
      const warm = streams.open("warm-up");
      for (let i = 0; i < WARM_UP; i++) warm.append(data[i]!);
      const time = (id: string, count: number) => {
        const writer = streams.open(id);
        const start = performance.now();
        for (let i = 0; i < count; i++) writer.append(data[i]!);
        return performance.now() - start;
      };
      const ms1k = time("s1k", SMALL);
      const sizeBefore = ctx.storage.sql.databaseSize;
      const ms10k = time("s10k", LARGE);
      const dbBytes = ctx.storage.sql.databaseSize - sizeBefore;

      // Rows and bytes are counted on a separate stream, so the timed runs carry no observer.
      const counting = countingState(ctx);
      const counted = new Streams(counting.state).open("counted");
      const rowsBefore = counting.counts().rowsWritten;
      for (let i = 0; i < LARGE; i++) counted.append(data[i]!);
      const rowsWritten = counting.counts().rowsWritten - rowsBefore;
      const payloadBytes = ctx.storage.sql
        .exec<{ bytes: number }>(
          `SELECT SUM(length(c.body)) AS bytes FROM dk_streams_chunks c
           JOIN dk_streams_streams s USING (stream_key) WHERE s.stream_id = 'counted'`,
        )
        .one().bytes;

      const floorMs = rawInsertFloor(
        ctx,
        data.map((d) => JSON.stringify(d)),
      );
      return figures(ms1k, ms10k, floorMs, rowsWritten, payloadBytes, dbBytes);
    },
  },
  anchor: {
    name: ANCHOR_NAME,
    async run({ ctx, env }) {
      const data = chunks(LARGE);
      const streams = await startAnchor(ctx, env);
      const warm = await streams.open("warm-up");
      for (let i = 0; i < WARM_UP; i++) warm.append(data[i]!);
      const time = async (id: string, count: number) => {
        const writer = await streams.open(id);
        const start = performance.now();
        for (let i = 0; i < count; i++) writer.append(data[i]!);
        return performance.now() - start;
      };
      const ms1k = await time("s1k", SMALL);
      const sizeBefore = ctx.storage.sql.databaseSize;
      const ms10k = await time("s10k", LARGE);
      const dbBytes = ctx.storage.sql.databaseSize - sizeBefore;

      const counting = countingState(ctx);
      const counted = await (await startAnchor(counting.state, env)).open("counted");
      const rowsBefore = counting.counts().rowsWritten;
      let payloadBytes = 0;
      for (let i = 0; i < LARGE; i++) {
        counted.append(data[i]!);
        // Each append rewrites the open block row whole (UPDATE body = body || chunk).
        payloadBytes += ctx.storage.sql
          .exec<{ len: number }>(
            "SELECT length(body) AS len FROM cf_agents_stream_blocks WHERE stream_id = 'counted' ORDER BY block DESC LIMIT 1",
          )
          .one().len;
      }
      const rowsWritten = counting.counts().rowsWritten - rowsBefore;

      const floorMs = rawInsertFloor(
        ctx,
        data.map((d) => JSON.stringify(d)),
      );
      return figures(ms1k, ms10k, floorMs, rowsWritten, payloadBytes, dbBytes);
    },
  },
};
