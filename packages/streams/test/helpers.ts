import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Fixture } from "./fixtures/worker";

let counter = 0;

/** A fresh fixture object per call, so tests never share streams. */
export function freshStub(label = "t"): DurableObjectStub<Fixture> {
  counter += 1;
  return env.FIXTURE.getByName(`${label}-${counter}-${crypto.randomUUID()}`);
}

/** Runs `fn` inside a fresh fixture object. */
export function inFixture<T>(
  fn: (fixture: Fixture, state: DurableObjectState) => Promise<T> | T,
  stub: DurableObjectStub<Fixture> = freshStub(),
): Promise<T> {
  return runInDurableObject(stub, fn);
}

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

/** A storage that counts what every SQL statement it runs reads and writes, from the SQLite cursors. */
export interface CountingStorage {
  storage: DurableObjectStorage;
  /** Rows written and read since the last `reset()`. */
  counts(filter?: (query: string) => boolean): {
    rowsWritten: number;
    rowsRead: number;
    statements: number;
  };
  reset(): void;
}

/**
 * Wraps a real storage so every `sql.exec` cursor is kept and its `rowsWritten`/`rowsRead` summed:
 * the same SQLite, observed, not mocked.
 */
export function countingStorage(real: DurableObjectStorage): CountingStorage {
  let cursors: { query: string; cursor: SqlStorageCursor<Record<string, SqlStorageValue>> }[] = [];
  const sql = new Proxy(real.sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (query: string, ...bindings: unknown[]) => {
          const cursor = target.exec(query, ...bindings);
          cursors.push({ query, cursor });
          return cursor;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const storage = new Proxy(real, {
    get(target, prop) {
      if (prop === "sql") return sql;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    storage,
    counts(filter) {
      let rowsWritten = 0;
      let rowsRead = 0;
      let statements = 0;
      for (const { query, cursor } of cursors) {
        if (filter && !filter(query)) continue;
        rowsWritten += cursor.rowsWritten;
        rowsRead += cursor.rowsRead;
        statements += 1;
      }
      return { rowsWritten, rowsRead, statements };
    },
    reset() {
      cursors = [];
    },
  };
}
