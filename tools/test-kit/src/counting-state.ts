/** One SQL statement the observed object ran, with its SQLite cursor. */
export interface SqlLogEntry {
  query: string;
  bindings: unknown[];
  cursor: SqlStorageCursor<Record<string, SqlStorageValue>>;
}

/** Rows written and read, and statements run, summed over part of a {@link CountingState}'s log. */
export interface SqlCounts {
  rowsWritten: number;
  rowsRead: number;
  statements: number;
}

/**
 * A Durable Object state whose storage records every `sql.exec` with its cursor: the same SQLite,
 * observed, not mocked. Counts are SQLite's own (`cursor.rowsWritten`/`rowsRead`, which include
 * index entries), summed when asked, so a statement's rows count once its cursor was consumed.
 */
export interface CountingState {
  /** Pass this to the part under test in place of the real state. */
  state: DurableObjectState;
  /** The same storage, observed (`state.storage`). */
  storage: DurableObjectStorage;
  /** Every statement run so far, in order. */
  log: SqlLogEntry[];
  /** A position in the log to count from. */
  mark(): number;
  /** Counts since `mark` (default: the last `reset()`), optionally only of statements whose text matches `filter`. */
  counts(mark?: number, filter?: RegExp | ((query: string) => boolean)): SqlCounts;
  /** Texts of the statements since `mark` that match `filter`. */
  statements(mark: number, filter: RegExp): string[];
  /** Forgets the log. */
  reset(): void;
}

/**
 * A view of `target` whose properties named in `overrides` are replaced, every other property read
 * from the target (methods bound to it). Used to observe or stub a part of a Durable Object's state
 * (its storage, its SQL, its alarm) without touching the rest.
 */
export function withOverrides<T extends object>(
  target: T,
  overrides: Record<PropertyKey, unknown>,
): T {
  return new Proxy(target, {
    get(object, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key];
      const value = Reflect.get(object, key, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

function matcher(filter: RegExp | ((query: string) => boolean) | undefined) {
  if (filter === undefined) return () => true;
  if (typeof filter === "function") return filter;
  return (query: string) => filter.test(query);
}

/** Wraps a Durable Object's state so every SQL statement its storage runs is counted. */
export function countingState(ctx: DurableObjectState): CountingState {
  const log: SqlLogEntry[] = [];
  const sql = ctx.storage.sql;
  const countingSql = withOverrides(sql, {
    exec: (query: string, ...bindings: unknown[]) => {
      const cursor = sql.exec(query, ...bindings);
      log.push({ query, bindings, cursor });
      return cursor;
    },
  });
  const storage = withOverrides(ctx.storage, { sql: countingSql });
  const state = withOverrides(ctx, { storage });
  return {
    state,
    storage,
    log,
    mark: () => log.length,
    counts(mark = 0, filter) {
      const keep = matcher(filter);
      const counts: SqlCounts = { rowsWritten: 0, rowsRead: 0, statements: 0 };
      for (const entry of log.slice(mark)) {
        if (!keep(entry.query)) continue;
        counts.rowsWritten += entry.cursor.rowsWritten;
        counts.rowsRead += entry.cursor.rowsRead;
        counts.statements += 1;
      }
      return counts;
    },
    statements(mark, filter) {
      return log
        .slice(mark)
        .map((entry) => entry.query)
        .filter((query) => filter.test(query));
    },
    reset() {
      log.length = 0;
    },
  };
}
