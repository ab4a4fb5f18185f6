import { migrateSchema } from "@durablekit/compose";
import { StreamsSchemaError } from "./errors";

/**
 * Schema version 1.
 *
 * - `dk_streams_streams`: one row per stream. `stream_key` is an AUTOINCREMENT surrogate key, so a
 *   deleted stream's key is never reused and a stale writer can never reach a new stream that took
 *   the same id. The row is written at creation, settlement, touch and sweep — never per append:
 *   the cursor of a live stream is the chunk log's tail, and `final_cursor` is stamped at settle.
 *   `wake_at` is a lower bound of the expiry (appends do not move it); the sweep refreshes it.
 * - `dk_streams_chunks`: one row per chunk, keyed `(stream_key, seq)` WITHOUT ROWID and with no
 *   secondary index, so an append writes exactly one b-tree entry. Producer columns are set only
 *   on producer writes; `writer_seq` only on the last chunk of a write that carried one.
 * - `dk_streams_chunks_fence`: a BEFORE INSERT trigger that skips any chunk row not at the tail of a
 *   streaming stream — the settled-fence and the cursor check, as reads inside the insert.
 * - `dk_streams_producers`: one row per (stream, producer id), written by the producer's first
 *   write; `producer_no` is the small number chunk rows carry instead of the id.
 * - `dk_streams_meta`: the `schema_version` row.
 */
const V1: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS dk_streams_streams (
    stream_key INTEGER PRIMARY KEY AUTOINCREMENT,
    stream_id TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL CHECK (state IN ('streaming', 'completed', 'errored')),
    content_type TEXT NOT NULL,
    encoding TEXT NOT NULL CHECK (encoding IN ('json', 'text', 'binary')),
    tag TEXT,
    metadata TEXT,
    error TEXT,
    ttl_ms INTEGER,
    expires_at INTEGER,
    created_at INTEGER NOT NULL,
    touched_at INTEGER NOT NULL,
    closed_at INTEGER,
    final_cursor INTEGER,
    closer_producer INTEGER,
    closer_epoch INTEGER,
    closer_seq INTEGER,
    wake_at INTEGER
  )`,
  `CREATE INDEX IF NOT EXISTS dk_streams_streams_tag
    ON dk_streams_streams (tag, stream_key) WHERE tag IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS dk_streams_streams_wake
    ON dk_streams_streams (wake_at) WHERE wake_at IS NOT NULL`,
  `CREATE TABLE IF NOT EXISTS dk_streams_chunks (
    stream_key INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    body BLOB,
    producer INTEGER,
    producer_epoch INTEGER,
    producer_seq INTEGER,
    writer_seq TEXT,
    PRIMARY KEY (stream_key, seq)
  ) WITHOUT ROWID`,
  // The log guards its own invariant: a chunk row goes in only at the tail of a streaming stream
  // (the previous seq exists, the stream row says 'streaming'); otherwise the row is skipped and the
  // statement reports 0 rows written. Both checks are reads inside the inserting statement; the
  // trigger writes nothing, so an append stays one row written. (A self-referencing
  // INSERT … SELECT would pay for a temporary table on every append; a trigger does not.)
  `CREATE TRIGGER IF NOT EXISTS dk_streams_chunks_fence BEFORE INSERT ON dk_streams_chunks
   BEGIN
     SELECT RAISE(IGNORE)
     WHERE NOT EXISTS (
         SELECT 1 FROM dk_streams_streams
         WHERE stream_key = NEW.stream_key AND state = 'streaming')
       OR (NEW.seq > 0 AND NOT EXISTS (
         SELECT 1 FROM dk_streams_chunks
         WHERE stream_key = NEW.stream_key AND seq = NEW.seq - 1));
   END`,
  `CREATE TABLE IF NOT EXISTS dk_streams_producers (
    stream_key INTEGER NOT NULL,
    producer_id TEXT NOT NULL,
    producer_no INTEGER NOT NULL,
    since_seq INTEGER NOT NULL,
    PRIMARY KEY (stream_key, producer_id)
  ) WITHOUT ROWID`,
];

/**
 * Schema version 2.
 *
 * - `dk_streams_chunks_fence` also refuses a chunk row once the stream has expired at the row's
 *   `at` (the append's clock): past `expires_at`, or `ttl_ms` after the later of the row's
 *   `touched_at` and the previous chunk's `at`. It reads the same two rows as before (the stream
 *   row and the previous chunk) and still writes nothing: an append stays
 *   one row written, and an append after expiry writes nothing, so it can neither revive a stream
 *   `status()` reported gone nor take a sequence number the sweep then deletes.
 * - `dk_streams_producers.fenced_epoch`: the newest epoch `open` has seen for a producer before it
 *   wrote in it (null when none was recorded). Writes of an older epoch are fenced from then on.
 */
const V2: readonly string[] = [
  "DROP TRIGGER IF EXISTS dk_streams_chunks_fence",
  // Sliding expiry is `max(touched_at, previous chunk's at) + ttl_ms`; written as an OR so the
  // previous chunk is read for it only when `touched_at` alone has already run out (a join form
  // measured slower per append).
  `CREATE TRIGGER dk_streams_chunks_fence BEFORE INSERT ON dk_streams_chunks
   BEGIN
     SELECT RAISE(IGNORE)
     WHERE NOT EXISTS (
         SELECT 1 FROM dk_streams_streams
         WHERE stream_key = NEW.stream_key AND state = 'streaming'
           AND (expires_at IS NULL OR expires_at > NEW.at)
           AND (ttl_ms IS NULL OR touched_at + ttl_ms > NEW.at
             OR (SELECT at FROM dk_streams_chunks
                 WHERE stream_key = NEW.stream_key AND seq = NEW.seq - 1) + ttl_ms > NEW.at))
       OR (NEW.seq > 0 AND NOT EXISTS (
         SELECT 1 FROM dk_streams_chunks
         WHERE stream_key = NEW.stream_key AND seq = NEW.seq - 1));
   END`,
  "ALTER TABLE dk_streams_producers ADD COLUMN fenced_epoch INTEGER",
];

/**
 * Schema version 3.
 *
 * - `dk_streams_streams.settled_ttl_ms`: the time to live of the stream once it has settled (null:
 *   `ttl_ms` applies after settlement too). It counts from the settlement (`touched_at`, which a
 *   settle and a touch set); the fence trigger only concerns streaming rows, so it is unchanged.
 */
const V3: readonly string[] = ["ALTER TABLE dk_streams_streams ADD COLUMN settled_ttl_ms INTEGER"];

/** Migration steps: `STEPS[n - 1]` brings the schema to version n. */
const STEPS = [V1, V2, V3] as const;

/** The schema version these sources write. Add a step (never edit one) for any table change. */
export const STREAMS_SCHEMA_VERSION = STEPS.length;

/**
 * Creates or checks the tables (through `migrateSchema` of `@durablekit/compose`, table noun
 * `streams`). Forward-only: an older version is migrated in one transaction; a newer one is
 * refused rather than misread.
 * @throws {StreamsSchemaError} `streams/schema-too-new`.
 */
export function migrateStreamsSchema(storage: DurableObjectStorage): void {
  migrateSchema(storage, {
    table: "streams",
    steps: STEPS,
    tooNew: (_message, found, supported) => new StreamsSchemaError(found, supported),
  });
}
