import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { fixtureObjects } from "@durablekit/test-kit";
import type { Fixture } from "./fixtures/worker";

/** Fresh fixture objects per call, so tests never share streams; `inFixture` runs inside one. */
export const { freshStub, inFixture } = fixtureObjects<DurableObjectStub<Fixture>, Fixture>(
  env.FIXTURE,
  (stub, fn) => runInDurableObject(stub, fn),
);

/** Collects an async iterable into an array. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** Lets queued microtasks and already-resolved continuations run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** Seqs of a stream's chunk rows, straight from SQLite. */
export function chunkRows(state: DurableObjectState, streamId: string): { seq: number }[] {
  return state.storage.sql
    .exec<{ seq: number }>(
      `SELECT c.seq FROM dk_streams_chunks c JOIN dk_streams_streams s USING (stream_key)
       WHERE s.stream_id = ? ORDER BY c.seq`,
      streamId,
    )
    .toArray();
}
