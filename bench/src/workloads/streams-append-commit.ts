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
  rawCommittedFloor,
  SMALL,
  startAnchor,
} from "./streams-shared";

/** Appends (and raw inserts) of the untimed pass that counts rows and commits. */
const COUNTED = 1_000;
const WARM_UP = 200;

/** A producer of one stream, whichever side opened it. */
interface Writer {
  append(chunk: unknown): unknown;
}

/** Opens writers on a side's streams over `state` (a fresh instance per call). */
type StreamsOver = (state: DurableObjectState) => Promise<(id: string) => Promise<Writer>>;

/** `count` appends to `writer`, each followed by `await storage.sync()`: one commit per append. */
async function appendCommitted(
  storage: DurableObjectStorage,
  writer: Writer,
  data: unknown[],
  count: number,
): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    writer.append(data[i]);
    await storage.sync();
  }
  return performance.now() - start;
}

/**
 * Timed appends at 1,000 and 10,000 chunks with no observer; then, over an observed state, rows and
 * commits per append and the commit counter's own check; then the committed raw-insert floor.
 */
async function measure(ctx: DurableObjectState, streamsOver: StreamsOver): Promise<Figures> {
  const data = chunks(LARGE);
  const bodies = data.map((d) => JSON.stringify(d));
  const open = await streamsOver(ctx);
  await appendCommitted(ctx.storage, await open("warm-up"), data, WARM_UP);
  const ms1k = await appendCommitted(ctx.storage, await open("s1k"), data, SMALL);
  const ms10k = await appendCommitted(ctx.storage, await open("s10k"), data, LARGE);

  const observed = new CommitCounter(ctx);
  const counted = await (await streamsOver(observed.state))("counted");
  observed.counting = true;
  const mark = observed.mark();
  await appendCommitted(observed.state.storage, counted, data, COUNTED);
  const rowsWritten = observed.rowsWritten(mark);
  const commits = await observed.commits(mark);
  const checkMark = observed.mark();
  await rawCommittedFloor(observed.state, bodies.slice(0, COUNTED));
  const checkCommits = await observed.commits(checkMark);
  observed.counting = false;

  const floorMs = await rawCommittedFloor(ctx, bodies);
  return {
    ...appendFigures(ms1k, ms10k, { appends: COUNTED, rowsWritten, commits }),
    floorPerSec: perSecond(LARGE, floorMs),
    vsFloor: ms10k / floorMs,
    counterCheck: checkCommits / COUNTED,
  };
}

/**
 * The streams-append work with a commit after each append (`await ctx.storage.sync()`), as when
 * chunks arrive over real I/O: each append is its own SQLite transaction, beside the same floor.
 */
export const streamsAppendCommit: Workload = {
  name: "streams-append-commit",
  title: `append ~120-byte JSON chunks with a commit after each (await storage.sync()): ${SMALL.toLocaleString("en")} and ${LARGE.toLocaleString("en")} per stream, vs raw inserts committed one by one`,
  metrics: [
    ...appendMetrics("append + commit", `${COUNTED.toLocaleString("en")} counted`),
    {
      key: "floorPerSec",
      label: "raw SQLite insert + commit floor, same object",
      unit: "inserts/s",
      better: "higher",
    },
    {
      key: "vsFloor",
      label: `${LARGE.toLocaleString("en")} committed appends ÷ ${LARGE.toLocaleString("en")} committed raw inserts (time)`,
      unit: "×",
      better: "lower",
    },
    {
      key: "counterCheck",
      label: "commit counter check: commits per raw insert + sync() (must be 1.00)",
      unit: "commits",
      better: "lower",
    },
  ],
  ours: {
    name: "@durablekit/streams",
    run: ({ ctx }) =>
      measure(ctx, async (state) => {
        const streams = new Streams(state);
        return async (id) => streams.open(id);
      }),
  },
  anchor: {
    name: ANCHOR_NAME,
    run: ({ ctx, env }) =>
      measure(ctx, async (state) => {
        const streams = await startAnchor(state, env);
        return (id) => streams.open(id);
      }),
  },
};
