import { Streams } from "@durablekit/streams";
import { perSecond } from "../timing";
import type { Figures, Workload } from "../workload";
import { CommitCounter } from "./commit-counter";
import {
  ANCHOR_NAME,
  appendFigures,
  appendMetrics,
  chunks,
  LARGE,
  rawInsertFloor,
  SMALL,
  startAnchor,
} from "./streams-shared";

const WARM_UP = 2_000;

/** The figures both sides report, from their appends and the floor measured in the same object. */
function figures(
  ms1k: number,
  ms10k: number,
  floorMs: number,
  rowsWritten: number,
  commits: number,
  payloadBytes: number,
  dbBytes: number,
): Figures {
  return {
    ...appendFigures(ms1k, ms10k, { appends: LARGE, rowsWritten, commits }),
    payloadBytesPerAppend: payloadBytes / LARGE,
    dbBytesPerAppend: dbBytes / LARGE,
    floorPerSec: perSecond(LARGE, floorMs),
    vsFloor: ms10k / floorMs,
  };
}

/**
 * Appending ~120-byte JSON chunks to one stream, batched: every append of a stream in one
 * synchronous loop, so in one SQLite transaction (streams-append-commit commits after each).
 * Throughput at 1,000 and 10,000 chunks, how the per-append cost grows with the stream, rows, commits
 * and bytes written per append, and the raw SQLite insert floor in the same object.
 */
export const streamsAppend: Workload = {
  name: "streams-append",
  title: `append ~120-byte JSON chunks, batched (all appends in one transaction): ${SMALL.toLocaleString("en")} and ${LARGE.toLocaleString("en")} per stream, vs raw inserts in the same object`,
  metrics: [
    ...appendMetrics("append", `${LARGE.toLocaleString("en")} counted`),
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
    async run({ ctx }) {
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

      // Rows, commits and bytes are counted on a separate stream, so the timed runs carry no observer.
      const observed = new CommitCounter(ctx);
      const counted = new Streams(observed.state).open("counted");
      observed.counting = true;
      const mark = observed.mark();
      for (let i = 0; i < LARGE; i++) counted.append(data[i]!);
      const rowsWritten = observed.rowsWritten(mark);
      const commits = await observed.commits(mark);
      observed.counting = false;
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
      return figures(ms1k, ms10k, floorMs, rowsWritten, commits, payloadBytes, dbBytes);
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

      const observed = new CommitCounter(ctx);
      const counted = await (await startAnchor(observed.state, env)).open("counted");
      observed.counting = true;
      const mark = observed.mark();
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
      const rowsWritten = observed.rowsWritten(mark);
      const commits = await observed.commits(mark);
      observed.counting = false;

      const floorMs = rawInsertFloor(
        ctx,
        data.map((d) => JSON.stringify(d)),
      );
      return figures(ms1k, ms10k, floorMs, rowsWritten, commits, payloadBytes, dbBytes);
    },
  },
};
