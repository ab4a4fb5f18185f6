import type { ProtocolStore } from "../protocol/store";

/** A subscription's configuration as created: what a confirming PUT must repeat. */
export interface SubscriptionConfig {
  type: "webhook" | "pull-wake";
  pattern: string | null;
  streams: string[];
  webhook: { url: string } | null;
  wake_stream: string | null;
  lease_ttl_ms: number;
  description: string | null;
}

/** A `dk_sse_subscriptions` row. */
export type SubscriptionRow = {
  id: string;
  type: "webhook" | "pull-wake";
  config: string;
  config_hash: string;
  origin: string;
  created_at: number;
  status: "active" | "failed" | "dead";
  generation: number;
  wake_id: string | null;
  /** JSON `[[path, tail seq], …]`: the tails the current wake covers. */
  snapshot: string | null;
  holder: string | null;
  lease_until: number | null;
  /** When the wake's delivery (webhook POST or wake-stream append) is due; null when none is. */
  due_at: number | null;
  attempts: number;
  unacked_wakes: number;
  last_error: string | null;
  dead_at: number | null;
};

/** A `dk_sse_links` row. */
export type LinkRow = {
  subscription_id: string;
  path: string;
  explicit: number;
  glob: number;
  acked_seq: number;
};

/** Columns a wake or delivery may change. */
export type SubscriptionPatch = Partial<
  Pick<
    SubscriptionRow,
    | "status"
    | "generation"
    | "wake_id"
    | "snapshot"
    | "holder"
    | "lease_until"
    | "due_at"
    | "attempts"
    | "unacked_wakes"
    | "last_error"
    | "dead_at"
  >
>;

const PATCHABLE = new Set([
  "status",
  "generation",
  "wake_id",
  "snapshot",
  "holder",
  "lease_until",
  "due_at",
  "attempts",
  "unacked_wakes",
  "last_error",
  "dead_at",
]);

/**
 * The hub's tables (`dk_sse_subscriptions`, `dk_sse_links`, `dk_sse_tails`). Every method is
 * synchronous; the hub groups them in transactions. Reads answer "nothing" until the first write
 * creates the tables.
 */
export class SubscriptionStore {
  readonly #store: ProtocolStore;

  constructor(store: ProtocolStore) {
    this.#store = store;
  }

  transaction<T>(fn: () => T): T {
    return this.#store.transaction(fn);
  }

  get(id: string): SubscriptionRow | null {
    return (
      this.#store
        .reader()
        ?.exec<SubscriptionRow>("SELECT * FROM dk_sse_subscriptions WHERE id = ?", id)
        .toArray()[0] ?? null
    );
  }

  /** Subscriptions in id order, after `after`, at most `limit`. */
  list(limit: number, after = ""): SubscriptionRow[] {
    return (
      this.#store
        .reader()
        ?.exec<SubscriptionRow>(
          "SELECT * FROM dk_sse_subscriptions WHERE id > ? ORDER BY id LIMIT ?",
          after,
          limit,
        )
        .toArray() ?? []
    );
  }

  /** Subscriptions with a pattern (the ones a new stream may join). */
  withPattern(): SubscriptionRow[] {
    return (
      this.#store
        .reader()
        ?.exec<SubscriptionRow>(
          "SELECT * FROM dk_sse_subscriptions WHERE json_extract(config, '$.pattern') IS NOT NULL",
        )
        .toArray() ?? []
    );
  }

  count(): number {
    return (
      this.#store
        .reader()
        ?.exec<{ n: number }>("SELECT count(*) AS n FROM dk_sse_subscriptions")
        .one().n ?? 0
    );
  }

  insert(row: SubscriptionRow): void {
    this.#store.writer().exec(
      `INSERT INTO dk_sse_subscriptions (id, type, config, config_hash, origin, created_at, status,
          generation, wake_id, snapshot, holder, lease_until, due_at, attempts, unacked_wakes, last_error, dead_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.id,
      row.type,
      row.config,
      row.config_hash,
      row.origin,
      row.created_at,
      row.status,
      row.generation,
      row.wake_id,
      row.snapshot,
      row.holder,
      row.lease_until,
      row.due_at,
      row.attempts,
      row.unacked_wakes,
      row.last_error,
      row.dead_at,
    );
  }

  patch(id: string, patch: SubscriptionPatch): void {
    const names = Object.keys(patch).filter((name) => PATCHABLE.has(name));
    if (names.length === 0) return;
    this.#store
      .writer()
      .exec(
        `UPDATE dk_sse_subscriptions SET ${names.map((name) => `${name} = ?`).join(", ")} WHERE id = ?`,
        ...names.map((name) => patch[name as keyof SubscriptionPatch] ?? null),
        id,
      );
  }

  delete(id: string): boolean {
    const sql = this.#store.reader();
    if (sql === null) return false;
    sql.exec("DELETE FROM dk_sse_links WHERE subscription_id = ?", id);
    return sql.exec("DELETE FROM dk_sse_subscriptions WHERE id = ?", id).rowsWritten > 0;
  }

  links(id: string): LinkRow[] {
    return (
      this.#store
        .reader()
        ?.exec<LinkRow>("SELECT * FROM dk_sse_links WHERE subscription_id = ? ORDER BY path", id)
        .toArray() ?? []
    );
  }

  linkCount(id: string): number {
    return (
      this.#store
        .reader()
        ?.exec<{ n: number }>(
          "SELECT count(*) AS n FROM dk_sse_links WHERE subscription_id = ?",
          id,
        )
        .one().n ?? 0
    );
  }

  /** Links a stream (or adds a kind to its link); a new link starts acknowledged at `ackedSeq`. */
  link(id: string, path: string, kind: "explicit" | "glob", ackedSeq: number): void {
    const explicit = kind === "explicit" ? 1 : 0;
    this.#store.writer().exec(
      `INSERT INTO dk_sse_links (subscription_id, path, explicit, glob, acked_seq) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (subscription_id, path) DO UPDATE SET
           explicit = max(explicit, excluded.explicit), glob = max(glob, excluded.glob)`,
      id,
      path,
      explicit,
      1 - explicit,
      ackedSeq,
    );
  }

  hasLink(id: string, path: string): boolean {
    return (
      (this.#store
        .reader()
        ?.exec("SELECT 1 FROM dk_sse_links WHERE subscription_id = ? AND path = ?", id, path)
        .toArray().length ?? 0) > 0
    );
  }

  /** Drops a stream's explicit link; the link goes when no pattern holds it either. */
  unlinkExplicit(id: string, path: string): void {
    const sql = this.#store.reader();
    if (sql === null) return;
    sql.exec(
      "DELETE FROM dk_sse_links WHERE subscription_id = ? AND path = ? AND glob = 0",
      id,
      path,
    );
    sql.exec(
      "UPDATE dk_sse_links SET explicit = 0 WHERE subscription_id = ? AND path = ?",
      id,
      path,
    );
  }

  setAcked(id: string, path: string, seq: number): void {
    this.#store
      .writer()
      .exec(
        "UPDATE dk_sse_links SET acked_seq = ? WHERE subscription_id = ? AND path = ? AND acked_seq < ?",
        seq,
        id,
        path,
        seq,
      );
  }

  /** The subscriptions that follow `path`. */
  linkedTo(path: string): string[] {
    return (
      this.#store
        .reader()
        ?.exec<{ subscription_id: string }>(
          "SELECT subscription_id FROM dk_sse_links WHERE path = ?",
          path,
        )
        .toArray()
        .map((row) => row.subscription_id) ?? []
    );
  }

  /** A deleted stream leaves every subscription. */
  unlinkPath(path: string): void {
    this.#store.reader()?.exec("DELETE FROM dk_sse_links WHERE path = ?", path);
  }

  /** The tail seq the hub last read for `path`, or null when it never heard of it. */
  tail(path: string): number | null {
    return (
      this.#store
        .reader()
        ?.exec<{ seq: number }>("SELECT seq FROM dk_sse_tails WHERE path = ?", path)
        .toArray()[0]?.seq ?? null
    );
  }

  /** Records a tail read from its stream; a tail never moves back (an older read loses). */
  setTail(path: string, seq: number): void {
    this.#store.writer().exec(
      `INSERT INTO dk_sse_tails (path, seq) VALUES (?, ?)
         ON CONFLICT (path) DO UPDATE SET seq = max(seq, excluded.seq)`,
      path,
      seq,
    );
  }

  deleteTail(path: string): void {
    this.#store.reader()?.exec("DELETE FROM dk_sse_tails WHERE path = ?", path);
  }

  /** Every stream the hub has heard of with its tail, in path order (a pattern's first links). */
  tails(): { path: string; seq: number }[] {
    return (
      this.#store
        .reader()
        ?.exec<{ path: string; seq: number }>("SELECT path, seq FROM dk_sse_tails ORDER BY path")
        .toArray() ?? []
    );
  }

  /** Subscriptions whose delivery is due, earliest first. */
  due(now: number, limit: number): SubscriptionRow[] {
    return (
      this.#store
        .reader()
        ?.exec<SubscriptionRow>(
          "SELECT * FROM dk_sse_subscriptions WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?",
          now,
          limit,
        )
        .toArray() ?? []
    );
  }

  /** Subscriptions whose lease ran out. */
  expired(now: number, limit: number): SubscriptionRow[] {
    return (
      this.#store
        .reader()
        ?.exec<SubscriptionRow>(
          "SELECT * FROM dk_sse_subscriptions WHERE lease_until IS NOT NULL AND lease_until <= ? ORDER BY lease_until LIMIT ?",
          now,
          limit,
        )
        .toArray() ?? []
    );
  }

  /** The earliest delivery or lease end, or null. */
  nextWakeAt(): number | null {
    const sql = this.#store.reader();
    if (sql === null) return null;
    const row = sql
      .exec<{ due: number | null; lease: number | null }>(
        "SELECT (SELECT min(due_at) FROM dk_sse_subscriptions) AS due, (SELECT min(lease_until) FROM dk_sse_subscriptions) AS lease",
      )
      .one();
    const times = [row.due, row.lease].filter((at): at is number => at !== null);
    return times.length === 0 ? null : Math.min(...times);
  }
}
