import { Lifecycle } from "agents/lifecycle";
import { Streams as AnchorStreams } from "agents/streams";
import { perSecond, sampleChunk } from "../timing";
import type { BenchEnv, Figures, MetricSpec } from "../workload";

/** The anchor side's name in every streams table. */
export const ANCHOR_NAME = "agents@0.32.0 agents/streams";

/** The two stream lengths the append workloads time. */
export const SMALL = 1_000;
export const LARGE = 10_000;

/**
 * The metrics both append workloads report first: throughput and time per `what` ("append",
 * "append + commit") at both lengths, their growth, and rows and commits per append (`counted` says
 * how they were counted).
 */
export function appendMetrics(what: string, counted: string): MetricSpec[] {
  const small = SMALL.toLocaleString("en");
  const large = LARGE.toLocaleString("en");
  return [
    {
      key: "perSec1k",
      label: `${what} throughput, ${small}-chunk stream`,
      unit: "chunks/s",
      better: "higher",
    },
    {
      key: "perSec10k",
      label: `${what} throughput, ${large}-chunk stream`,
      unit: "chunks/s",
      better: "higher",
    },
    { key: "us1k", label: `per ${what}, ${small}-chunk stream`, unit: "µs", better: "lower" },
    { key: "us10k", label: `per ${what}, ${large}-chunk stream`, unit: "µs", better: "lower" },
    { key: "growth", label: "per-append cost growth, 10k ÷ 1k stream", unit: "×", better: "lower" },
    {
      key: "rowsPerAppend",
      label: `rows written per append (${counted})`,
      unit: "rows",
      better: "lower",
    },
    {
      key: "commitsPerAppend",
      label: `SQLite commits per append (${counted})`,
      unit: "commits",
      better: "lower",
    },
  ];
}

/** The figures of {@link appendMetrics}: from the two timed lengths and the counted appends. */
export function appendFigures(
  ms1k: number,
  ms10k: number,
  counted: { appends: number; rowsWritten: number; commits: number },
): Figures {
  const us1k = (ms1k * 1000) / SMALL;
  const us10k = (ms10k * 1000) / LARGE;
  return {
    perSec1k: perSecond(SMALL, ms1k),
    perSec10k: perSecond(LARGE, ms10k),
    us1k,
    us10k,
    growth: us10k / us1k,
    rowsPerAppend: counted.rowsWritten / counted.appends,
    commitsPerAppend: counted.commits / counted.appends,
  };
}

/** ~120-byte JSON chunks, distinct per index, built before any timing starts. */
export function chunks(count: number): { i: number; text: string }[] {
  return Array.from({ length: count }, (_, i) => sampleChunk(i));
}

/**
 * `agents/streams` standalone: its `Streams` is a Lifecycle capability, so it gets the minimal host
 * a Lifecycle needs — an object with the Durable Object's `ctx` (or a counted view of it) and `env` —
 * and a started Lifecycle (which runs the capability's table setup).
 */
export async function startAnchor(ctx: DurableObjectState, env: BenchEnv): Promise<AnchorStreams> {
  const host = { ctx, env };
  const lifecycle = new Lifecycle(host as never);
  const streams = new AnchorStreams();
  lifecycle.use(streams);
  await lifecycle.start();
  return streams;
}

/**
 * The raw SQLite insert floor in the calling object: `count` single-row inserts of the same
 * pre-serialized chunks into a plain rowid table, one `sql.exec` each. Returns milliseconds.
 */
export function rawInsertFloor(ctx: DurableObjectState, bodies: string[]): number {
  const sql = floorTable(ctx);
  const start = performance.now();
  for (const body of bodies) sql.exec("INSERT INTO bench_streams_floor (body) VALUES (?)", body);
  return performance.now() - start;
}

/**
 * The committed floor: as {@link rawInsertFloor}, with `await ctx.storage.sync()` after each insert
 * (one SQLite commit per row). Returns milliseconds.
 */
export async function rawCommittedFloor(
  ctx: DurableObjectState,
  bodies: string[],
): Promise<number> {
  const sql = floorTable(ctx);
  const start = performance.now();
  for (const body of bodies) {
    sql.exec("INSERT INTO bench_streams_floor (body) VALUES (?)", body);
    await ctx.storage.sync();
  }
  return performance.now() - start;
}

function floorTable(ctx: DurableObjectState): SqlStorage {
  ctx.storage.sql.exec(
    "CREATE TABLE IF NOT EXISTS bench_streams_floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
  );
  return ctx.storage.sql;
}
