import { Lifecycle } from "agents/lifecycle";
import { Streams as AnchorStreams } from "agents/streams";
import { sampleChunk } from "../timing";
import type { BenchEnv } from "../workload";

/** The anchor side's name in every streams table. */
export const ANCHOR_NAME = "agents@0.32.0 agents/streams";

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
  const sql = ctx.storage.sql;
  sql.exec(
    "CREATE TABLE IF NOT EXISTS bench_streams_floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
  );
  const start = performance.now();
  for (const body of bodies) sql.exec("INSERT INTO bench_streams_floor (body) VALUES (?)", body);
  return performance.now() - start;
}
