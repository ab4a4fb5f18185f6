import { migrateSchema } from "@durablekit/compose";
import { SseSchemaError } from "../errors";

/**
 * Schema version 1 — fork bookkeeping of the protocol handler (the chunk logs themselves live in
 * `@durablekit/streams`' tables):
 *
 * - `dk_sse_forks`: one row per stream of this object that is a fork: the source it copied from
 *   and the reference it holds there, with the fork's `created_at` (its incarnation) so a later
 *   stream under the same id is never mistaken for the fork.
 * - `dk_sse_fork_refs`: one row per fork (anywhere) that holds a reference on a stream of this
 *   object. While a stream has references, deleting it soft-deletes it (410 Gone).
 * - `dk_sse_releases`: references this object still has to release on a source — the outbox. A
 *   row is written before a fork asks its source for a reference (so a crash mid-fork cannot leak
 *   one) and removed in the transaction that creates the fork; `due_at` is when to deliver it.
 * - `dk_sse_meta`: the `schema_version` row.
 */
const V1: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS dk_sse_forks (
    stream_id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL,
    ref TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS dk_sse_fork_refs (
    stream_id TEXT NOT NULL,
    ref TEXT NOT NULL,
    PRIMARY KEY (stream_id, ref)
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS dk_sse_releases (
    source_id TEXT NOT NULL,
    ref TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (source_id, ref)
  ) WITHOUT ROWID`,
  "CREATE INDEX IF NOT EXISTS dk_sse_releases_due ON dk_sse_releases (due_at)",
];

/**
 * Schema version 2 — Durable Streams subscriptions:
 *
 * - `dk_sse_notices` (a stream's object): streams whose tail changed and whose subscription hub has
 *   not yet been told; written in the transaction of the change, removed once the hub has read it.
 * - `dk_sse_subscriptions` (the hub's object): one row per subscription, with its current wake
 *   (generation, wake id, snapshot of tails, holder, lease) and its delivery state.
 * - `dk_sse_links`: the streams a subscription follows (explicitly or by its pattern) and the seq
 *   acknowledged on each (-1: nothing yet, the stream was linked before its first append).
 * - `dk_sse_tails`: the tail seq of every stream the hub has heard of, as read from the stream.
 * - `dk_sse_keys`: the hub's signing key (Ed25519) and token key (HMAC), made on first use.
 */
const V2: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS dk_sse_notices (
    stream_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS dk_sse_subscriptions (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL CHECK (type IN ('webhook', 'pull-wake')),
    config TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    origin TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'failed', 'dead')),
    generation INTEGER NOT NULL DEFAULT 0,
    wake_id TEXT,
    snapshot TEXT,
    holder TEXT,
    lease_until INTEGER,
    due_at INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    unacked_wakes INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    dead_at INTEGER
  ) WITHOUT ROWID`,
  "CREATE INDEX IF NOT EXISTS dk_sse_subscriptions_due ON dk_sse_subscriptions (due_at) WHERE due_at IS NOT NULL",
  "CREATE INDEX IF NOT EXISTS dk_sse_subscriptions_lease ON dk_sse_subscriptions (lease_until) WHERE lease_until IS NOT NULL",
  `CREATE TABLE IF NOT EXISTS dk_sse_links (
    subscription_id TEXT NOT NULL,
    path TEXT NOT NULL,
    explicit INTEGER NOT NULL DEFAULT 0,
    glob INTEGER NOT NULL DEFAULT 0,
    acked_seq INTEGER NOT NULL,
    PRIMARY KEY (subscription_id, path)
  ) WITHOUT ROWID`,
  "CREATE INDEX IF NOT EXISTS dk_sse_links_by_path ON dk_sse_links (path)",
  `CREATE TABLE IF NOT EXISTS dk_sse_tails (
    path TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS dk_sse_keys (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID`,
];

/** Migration steps: `STEPS[n - 1]` brings the schema to version n. */
const STEPS = [V1, V2] as const;

/** The schema version of the `dk_sse_*` tables these sources write. Add a step (never edit one) for any table change. */
export const SSE_SCHEMA_VERSION = STEPS.length;

/** A `dk_sse_forks` row. */
export type ForkRow = {
  stream_id: string;
  source_id: string;
  ref: string;
  created_at: number;
};

/** A `dk_sse_releases` row. */
export type ReleaseRow = {
  source_id: string;
  ref: string;
  due_at: number;
  attempts: number;
};

/**
 * The protocol handler's own tables. Every method is synchronous; callers group them in
 * transactions. The tables are created by the first write that needs them, so an object whose
 * streams are never forked never gets them: until then every read answers "nothing".
 */
export class ProtocolStore {
  readonly #storage: DurableObjectStorage;
  #state: "unknown" | "absent" | "ready" = "unknown";

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
  }

  /** The SQL handle for a read, or null while the tables do not exist (for this package's stores). */
  reader(): SqlStorage | null {
    return this.#reader();
  }

  /** The SQL handle for a write, creating the tables first if needed (for this package's stores). */
  writer(): SqlStorage {
    return this.#writer();
  }

  /** The SQL handle for a read, or null while the tables do not exist. */
  #reader(): SqlStorage | null {
    if (this.#state === "unknown") this.#probe();
    return this.#state === "ready" ? this.#storage.sql : null;
  }

  /** The SQL handle for a write, creating the tables first if needed. */
  #writer(): SqlStorage {
    if (this.#state !== "ready") this.#migrate();
    return this.#storage.sql;
  }

  /** Runs `fn` in one SQLite transaction. */
  transaction<T>(fn: () => T): T {
    return this.#storage.transactionSync(fn);
  }

  fork(streamId: string): ForkRow | null {
    return (
      this.#reader()
        ?.exec<ForkRow>("SELECT * FROM dk_sse_forks WHERE stream_id = ?", streamId)
        .toArray()[0] ?? null
    );
  }

  forks(): ForkRow[] {
    return this.#reader()?.exec<ForkRow>("SELECT * FROM dk_sse_forks").toArray() ?? [];
  }

  setFork(row: ForkRow): void {
    this.#writer().exec(
      "INSERT OR REPLACE INTO dk_sse_forks (stream_id, source_id, ref, created_at) VALUES (?, ?, ?, ?)",
      row.stream_id,
      row.source_id,
      row.ref,
      row.created_at,
    );
  }

  deleteFork(streamId: string): void {
    this.#reader()?.exec("DELETE FROM dk_sse_forks WHERE stream_id = ?", streamId);
  }

  /** How many forks hold a reference on a stream of this object. */
  refCount(streamId: string): number {
    return (
      this.#reader()
        ?.exec<{ n: number }>(
          "SELECT count(*) AS n FROM dk_sse_fork_refs WHERE stream_id = ?",
          streamId,
        )
        .one().n ?? 0
    );
  }

  hasRef(streamId: string, ref: string): boolean {
    return (
      (this.#reader()
        ?.exec("SELECT 1 FROM dk_sse_fork_refs WHERE stream_id = ? AND ref = ?", streamId, ref)
        .toArray().length ?? 0) > 0
    );
  }

  addRef(streamId: string, ref: string): void {
    this.#writer().exec(
      "INSERT OR IGNORE INTO dk_sse_fork_refs (stream_id, ref) VALUES (?, ?)",
      streamId,
      ref,
    );
  }

  deleteRef(streamId: string, ref: string): void {
    this.#reader()?.exec(
      "DELETE FROM dk_sse_fork_refs WHERE stream_id = ? AND ref = ?",
      streamId,
      ref,
    );
  }

  /** Schedules (or reschedules) the release of `ref` on `sourceId` at `dueAt`. */
  scheduleRelease(sourceId: string, ref: string, dueAt: number, attempts = 0): void {
    this.#writer().exec(
      // Every column is given, so replacing the row is the whole upsert.
      "INSERT OR REPLACE INTO dk_sse_releases (source_id, ref, due_at, attempts) VALUES (?, ?, ?, ?)",
      sourceId,
      ref,
      dueAt,
      attempts,
    );
  }

  dropRelease(sourceId: string, ref: string): void {
    this.#reader()?.exec(
      "DELETE FROM dk_sse_releases WHERE source_id = ? AND ref = ?",
      sourceId,
      ref,
    );
  }

  dueReleases(now: number, limit: number): ReleaseRow[] {
    return (
      this.#reader()
        ?.exec<ReleaseRow>(
          "SELECT * FROM dk_sse_releases WHERE due_at <= ? ORDER BY due_at LIMIT ?",
          now,
          limit,
        )
        .toArray() ?? []
    );
  }

  earliestRelease(): number | null {
    return (
      this.#reader()
        ?.exec<{ at: number | null }>("SELECT min(due_at) AS at FROM dk_sse_releases")
        .one().at ?? null
    );
  }

  /** Looks for the tables once per instance; checks (and upgrades) them when they exist. */
  #probe(): void {
    const exists =
      this.#storage.sql
        .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dk_sse_meta'")
        .toArray().length > 0;
    if (exists) this.#migrate();
    else this.#state = "absent";
  }

  /**
   * Creates or upgrades the tables through `migrateSchema` of `@durablekit/compose` (table noun
   * `sse`): forward-only, in one transaction; a newer version is refused, never misread.
   * @throws {SseSchemaError} `sse/schema-too-new`.
   */
  #migrate(): void {
    migrateSchema(this.#storage, {
      table: "sse",
      steps: STEPS,
      tooNew: (_message, found, supported) => new SseSchemaError(found, supported),
    });
    this.#state = "ready";
  }
}
