import { isCallKey } from "./call-key";
import { JournalError } from "./errors";
import {
  type JournalEntry,
  type JournalRecord,
  OUTCOME_KINDS,
  type OutcomeKind,
} from "./journal-entry";
import type { JournalPort } from "./journal-port";

/** Version of the `dk_journal_*` tables this code writes (see DESIGN.md, "Storage"). */
export const JOURNAL_SCHEMA_VERSION = 1;

/**
 * Payloads longer than this many UTF-16 code units are split into chunk rows. 500,000 units are at
 * most 1.5 MB of UTF-8, under the 2 MB Durable Object SQLite limit for a string or row.
 */
export const DEFAULT_CHUNK_CHARS = 500_000;

/** Options of {@link JournalStore}. */
export interface JournalStoreOptions {
  /** Split payloads longer than this many UTF-16 code units into chunk rows. Default 500,000. */
  chunkChars?: number;
  /** Clock for `recordedAt`. Default `Date.now`. */
  now?: () => number;
}

/** What one {@link JournalStore.record} wrote. */
export interface RecordResult {
  /** The entry's order of recording within its execution. */
  seq: number;
  /** Chunk rows the payload was split into (0 when it fit in the entry row). */
  chunks: number;
  /** SQLite rows written: 1, plus one per chunk. */
  rowsWritten: number;
}

const OUTCOMES: ReadonlySet<string> = new Set(OUTCOME_KINDS);

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS dk_journal_meta (
     name TEXT PRIMARY KEY,
     value TEXT NOT NULL
   ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS dk_journal_entries (
     execution_id TEXT NOT NULL,
     call_key TEXT NOT NULL,
     seq INTEGER NOT NULL,
     module TEXT NOT NULL,
     method TEXT NOT NULL,
     args_digest TEXT NOT NULL,
     outcome TEXT NOT NULL,
     payload TEXT,
     chunks INTEGER NOT NULL,
     recorded_at INTEGER NOT NULL,
     PRIMARY KEY (execution_id, call_key)
   ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS dk_journal_chunks (
     execution_id TEXT NOT NULL,
     call_key TEXT NOT NULL,
     part INTEGER NOT NULL,
     data TEXT NOT NULL,
     PRIMARY KEY (execution_id, call_key, part)
   ) WITHOUT ROWID`,
];

// One query loads a whole journal: entry rows, each chunked entry repeated once per chunk.
const SELECT_ENTRIES = `SELECT e.call_key, e.seq, e.module, e.method, e.args_digest, e.outcome, e.payload,
    e.chunks, e.recorded_at, c.data
  FROM dk_journal_entries e
  LEFT JOIN dk_journal_chunks c
    ON e.chunks > 0 AND c.execution_id = e.execution_id AND c.call_key = e.call_key
  WHERE e.execution_id = ?
  ORDER BY e.seq, c.part`;

const SELECT_ENTRY = `SELECT e.call_key, e.seq, e.module, e.method, e.args_digest, e.outcome, e.payload,
    e.chunks, e.recorded_at, c.data
  FROM dk_journal_entries e
  LEFT JOIN dk_journal_chunks c
    ON e.chunks > 0 AND c.execution_id = e.execution_id AND c.call_key = e.call_key
  WHERE e.execution_id = ? AND e.call_key = ?
  ORDER BY c.part`;

const INSERT_ENTRY = `INSERT INTO dk_journal_entries
  (execution_id, call_key, seq, module, method, args_digest, outcome, payload, chunks, recorded_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const INSERT_CHUNK =
  "INSERT INTO dk_journal_chunks (execution_id, call_key, part, data) VALUES (?, ?, ?, ?)";

type Row = [
  string,
  number,
  string,
  string,
  string,
  string,
  string | null,
  number,
  number,
  string | null,
];

/** Splits at most `size` code units at a time, never between the halves of a surrogate pair. */
function split(text: string, size: number): string[] {
  const parts: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    parts.push(text.slice(at, end));
    at = end;
  }
  return parts;
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed|PRIMARY KEY/i.test(error.message);
}

/** A chunked entry with its payload put back together from its chunk rows. */
function joined(entry: JournalEntry, parts: string[], expected: number): JournalEntry {
  if (parts.length !== expected) {
    throw new JournalError(
      "journal/corrupt",
      `Call ${entry.key} of execution ${entry.executionId} has ${parts.length} of its ${expected} chunk rows; the journal was altered outside this package.`,
    );
  }
  entry.payload = parts.join("");
  return entry;
}

/**
 * The call journal in Durable Object SQLite (`dk_journal_*` tables): one row per recorded call,
 * chunk rows for payloads over the row limit, a whole execution loaded in one query, deleted by
 * execution. Every write is one `transactionSync`, so an eviction never leaves half an entry.
 *
 * Construct it in the Durable Object's constructor (it creates or checks its tables there). One
 * store per Durable Object: `seq` is assigned from a counter this instance keeps per execution.
 */
export class JournalStore implements JournalPort {
  private readonly sql: SqlStorage;
  private readonly chunkChars: number;
  private readonly now: () => number;
  /** Last seq per execution, loaded on the first record of that execution after a restart. */
  private readonly lastSeq = new Map<string, number>();

  /**
   * @throws JournalError `journal/schema-too-new` when the tables were written by a newer version.
   */
  constructor(
    private readonly storage: DurableObjectStorage,
    options: JournalStoreOptions = {},
  ) {
    this.sql = storage.sql;
    this.chunkChars = options.chunkChars ?? DEFAULT_CHUNK_CHARS;
    this.now = options.now ?? Date.now;
    if (!Number.isSafeInteger(this.chunkChars) || this.chunkChars < 2) {
      throw new RangeError(`chunkChars must be an integer of at least 2, got ${this.chunkChars}.`);
    }
    storage.transactionSync(() => this.migrate());
  }

  private migrate(): void {
    for (const statement of SCHEMA) this.sql.exec(statement);
    const row = this.sql
      .exec<{ value: string }>("SELECT value FROM dk_journal_meta WHERE name = 'schema_version'")
      .toArray()[0];
    if (row === undefined) {
      this.sql.exec(
        "INSERT INTO dk_journal_meta (name, value) VALUES ('schema_version', ?)",
        String(JOURNAL_SCHEMA_VERSION),
      );
      return;
    }
    const version = Number(row.value);
    if (version > JOURNAL_SCHEMA_VERSION) {
      throw new JournalError(
        "journal/schema-too-new",
        `The dk_journal_* tables are at schema version ${version}, newer than this @durablekit/handle-journal (version ${JOURNAL_SCHEMA_VERSION}). Deploy the newer package version; downgrading is not supported.`,
      );
    }
  }

  /**
   * Records one call in one transaction: one row, plus one chunk row per `chunkChars` of a
   * longer payload. Record before delivering the outcome, so a restart never re-runs a call whose
   * result someone already saw.
   * @throws JournalError `journal/duplicate-key` when the key is already recorded for the
   *   execution; `journal/bad-key` for a malformed key, empty execution id or unknown outcome.
   */
  record(entry: JournalRecord): RecordResult {
    const { executionId, key, outcome, payload } = entry;
    if (typeof executionId !== "string" || executionId.length === 0) {
      throw new JournalError("journal/bad-key", "An execution id must be a non-empty string.");
    }
    if (!isCallKey(key)) {
      throw new JournalError(
        "journal/bad-key",
        `"${String(key)}" is not a call key: use topLevelKey(n) or childKey(parent, n).`,
      );
    }
    if (!OUTCOMES.has(outcome)) {
      throw new JournalError(
        "journal/bad-key",
        `"${String(outcome)}" is not an outcome: use one of ${OUTCOME_KINDS.join(", ")}.`,
      );
    }
    const seq = this.nextSeq(executionId);
    const parts =
      payload !== null && payload.length > this.chunkChars
        ? split(payload, this.chunkChars)
        : undefined;
    let rowsWritten = 0;
    try {
      this.storage.transactionSync(() => {
        rowsWritten += this.sql.exec(
          INSERT_ENTRY,
          executionId,
          key,
          seq,
          entry.module,
          entry.method,
          entry.argsDigest,
          outcome,
          parts === undefined ? payload : null,
          parts === undefined ? 0 : parts.length,
          this.now(),
        ).rowsWritten;
        if (parts !== undefined) {
          for (let i = 0; i < parts.length; i++) {
            rowsWritten += this.sql.exec(
              INSERT_CHUNK,
              executionId,
              key,
              i,
              parts[i] as string,
            ).rowsWritten;
          }
        }
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new JournalError(
          "journal/duplicate-key",
          `Call ${key} of execution ${executionId} is already recorded; a call key is recorded once. Replay it instead of running it again.`,
          { cause: error },
        );
      }
      throw new JournalError(
        "journal/storage",
        `Recording call ${key} of execution ${executionId} failed; retry.`,
        {
          cause: error,
        },
      );
    }
    this.lastSeq.set(executionId, seq);
    return { seq, chunks: parts?.length ?? 0, rowsWritten };
  }

  private nextSeq(executionId: string): number {
    let last = this.lastSeq.get(executionId);
    if (last === undefined) {
      const row = this.sql
        .exec<{ last: number | null }>(
          "SELECT MAX(seq) AS last FROM dk_journal_entries WHERE execution_id = ?",
          executionId,
        )
        .toArray()[0];
      last = row?.last ?? 0;
    }
    return last + 1;
  }

  /** Every entry of an execution in recorded order, in one query; `[]` for an unknown execution. */
  entries(executionId: string): JournalEntry[] {
    return this.collect(
      executionId,
      this.sql.exec(SELECT_ENTRIES, executionId).raw() as Iterable<Row>,
    );
  }

  /** {@link JournalPort.lookup}: the same as {@link entries}. */
  lookup(executionId: string): JournalEntry[] {
    return this.entries(executionId);
  }

  /** One entry, or undefined when the key is not recorded. */
  entry(executionId: string, key: string): JournalEntry | undefined {
    return this.collect(
      executionId,
      this.sql.exec(SELECT_ENTRY, executionId, key).raw() as Iterable<Row>,
    )[0];
  }

  private collect(executionId: string, rows: Iterable<Row>): JournalEntry[] {
    const out: JournalEntry[] = [];
    let chunked: JournalEntry | undefined;
    let expected = 0;
    let parts: string[] = [];
    for (const row of rows) {
      const [key, seq, module, method, argsDigest, outcome, payload, chunks, recordedAt, data] =
        row;
      if (chunked !== undefined) {
        if (chunks > 0 && chunked.key === key) {
          parts.push(data ?? "");
          continue;
        }
        out.push(joined(chunked, parts, expected));
        chunked = undefined;
      }
      const entry: JournalEntry = {
        executionId,
        key,
        seq,
        module,
        method,
        argsDigest,
        outcome: outcome as OutcomeKind,
        payload,
        recordedAt,
      };
      if (chunks > 0) {
        chunked = entry;
        expected = chunks;
        parts = data === null ? [] : [data];
      } else {
        out.push(entry);
      }
    }
    if (chunked !== undefined) out.push(joined(chunked, parts, expected));
    return out;
  }

  /**
   * Replaces the outcome of an `interrupt` entry (e.g. with the value a resume supplied), in one
   * transaction. Returns false when the key is not recorded as an interrupt.
   */
  resolveInterrupt(
    executionId: string,
    key: string,
    outcome: OutcomeKind,
    payload: string | null,
  ): boolean {
    const parts =
      payload !== null && payload.length > this.chunkChars
        ? split(payload, this.chunkChars)
        : undefined;
    let updated = false;
    this.storage.transactionSync(() => {
      const cursor = this.sql.exec(
        `UPDATE dk_journal_entries SET outcome = ?, payload = ?, chunks = ?, recorded_at = ?
           WHERE execution_id = ? AND call_key = ? AND outcome = 'interrupt'`,
        outcome,
        parts === undefined ? payload : null,
        parts === undefined ? 0 : parts.length,
        this.now(),
        executionId,
        key,
      );
      updated = cursor.rowsWritten > 0;
      if (!updated) return;
      this.sql.exec(
        "DELETE FROM dk_journal_chunks WHERE execution_id = ? AND call_key = ?",
        executionId,
        key,
      );
      if (parts !== undefined) {
        for (let i = 0; i < parts.length; i++)
          this.sql.exec(INSERT_CHUNK, executionId, key, i, parts[i] as string);
      }
    });
    return updated;
  }

  /** Deletes an execution's whole journal in one transaction; returns how many entries it had. */
  deleteExecution(executionId: string): number {
    let deleted = 0;
    this.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM dk_journal_chunks WHERE execution_id = ?", executionId);
      deleted = this.sql.exec(
        "DELETE FROM dk_journal_entries WHERE execution_id = ?",
        executionId,
      ).rowsWritten;
    });
    this.lastSeq.delete(executionId);
    return deleted;
  }
}
