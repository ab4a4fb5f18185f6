import {
  createEmitter,
  createOptionChecks,
  isWellFormedName,
  migrateSchema,
} from "@durablekit/compose";
import { JournalError } from "./errors";
import { createJournalArgumentChecks, type JournalArgumentChecks } from "./journal-checks";
import type { JournalEntry, JournalOutcomeKind, JournalRecord } from "./journal-entry";
import type { JournalPort, JournalRecorded } from "./journal-port";
import { collectEntries, type EntryRow, SELECT_ENTRIES } from "./journal-rows";
import { splitText } from "./split-text";

/** Events a {@link JournalStore} emits through `onEvent`. */
export type JournalEvent =
  | {
      type: "journal:recorded";
      executionId: string;
      key: string;
      seq: number;
      outcome: JournalOutcomeKind;
      /** Chunk rows the payload was split into (0 when it fit in the entry row). */
      chunks: number;
    }
  /** A pending `interrupt` or `unsafe` entry got its outcome ({@link JournalStore.resolve}). */
  | { type: "journal:resolved"; executionId: string; key: string; outcome: JournalOutcomeKind }
  | { type: "journal:execution-deleted"; executionId: string; entries: number };

/**
 * Default of {@link JournalStoreOptions.maxChunkBytes}: 1.5 MB, under the 2 MB Durable Object
 * SQLite limit for a string or row.
 */
export const DEFAULT_MAX_CHUNK_BYTES = 1_500_000;

/** Longest name (execution id) the store accepts, in UTF-16 code units. */
const MAX_NAME_LENGTH = 256;

/** Options of {@link JournalStore}. */
export interface JournalStoreOptions {
  /**
   * Payloads that may take more than this many UTF-8 bytes are split into chunk rows of at most this
   * many bytes each. Default 1,500,000 (1.5 MB, under the 2 MB SQLite row limit); at least 6.
   */
  maxChunkBytes?: number;
  /** Clock for `recordedAt`. Default `Date.now`. */
  now?: () => number;
  /** Receives {@link JournalEvent}s; a throwing listener is reported with `console.warn` and ignored. */
  onEvent?: (event: JournalEvent) => void;
}

/** What one {@link JournalStore.record} wrote. */
export interface JournalRecordResult extends JournalRecorded {
  /** Chunk rows the payload was split into (0 when it fit in the entry row). */
  chunks: number;
  /** SQLite rows written: 1, plus one per chunk. */
  rowsWritten: number;
}

/** Migration steps of the `dk_journal_*` tables; the version is their count (see DESIGN.md, "Storage"). */
const SCHEMA_STEPS = [
  [
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
  ],
] as const;

/** Version of the `dk_journal_*` tables this code writes (see DESIGN.md, "Storage"). */
export const JOURNAL_SCHEMA_VERSION = SCHEMA_STEPS.length;

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

function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed|PRIMARY KEY/i.test(error.message);
}

function invalid(message: string): JournalError {
  return new JournalError("journal/invalid-argument", message);
}

/** The door checks of `@durablekit/compose`, throwing `journal/invalid-argument`. */
const check = createOptionChecks(invalid);

function checkExecutionId(executionId: unknown): asserts executionId is string {
  if (!isWellFormedName(executionId, MAX_NAME_LENGTH)) {
    throw invalid(
      `An execution id must be a non-empty string of at most ${MAX_NAME_LENGTH} UTF-16 code units without lone surrogates; got ${typeof executionId === "string" ? JSON.stringify(executionId.slice(0, 40)) : typeof executionId}.`,
    );
  }
}

/** The argument rules every journal port shares, throwing `journal/invalid-argument`. */
const journalCheck: JournalArgumentChecks = createJournalArgumentChecks(invalid);

/**
 * The call journal in Durable Object SQLite (`dk_journal_*` tables): one row per recorded call,
 * chunk rows for payloads over the row limit, a whole execution loaded in one query, deleted by
 * execution. Every write is one `transactionSync`, so an eviction never leaves half an entry.
 *
 * Construct it in the Durable Object's constructor (it creates or checks its tables there). More
 * than one store over the same object is correct (the rpc-bridge's `Executor` keeps one of its
 * own): `seq` is assigned from one counter per execution that every store of the object's storage
 * shares, and nothing else is kept in memory.
 */
export class JournalStore implements JournalPort {
  readonly #storage: DurableObjectStorage;
  readonly #sql: SqlStorage;
  /**
   * Payloads longer than this many UTF-16 code units are split into chunks of at most this many.
   * A code unit is at most 3 UTF-8 bytes (a surrogate pair, 2 units, is 4), so a chunk of
   * `floor(maxChunkBytes / 3)` units is at most `maxChunkBytes` bytes without measuring it.
   */
  readonly #chunkUnits: number;
  readonly #now: () => number;
  readonly #emit: (event: JournalEvent) => void;
  /** Last seq per execution, loaded on the first record of that execution after a restart. */
  readonly #lastSeq: Map<string, number>;
  /** The last-seq counters of each object's storage, shared by every store over it. */
  static readonly #counters = new WeakMap<DurableObjectStorage, Map<string, number>>();

  /**
   * @param ctx - the Durable Object's state; the store uses `ctx.storage` (SQLite-backed).
   * @throws JournalError `journal/schema-too-new` when the tables were written by a newer version;
   *   `journal/invalid-argument` for a malformed option.
   */
  constructor(ctx: DurableObjectState, options: JournalStoreOptions = {}) {
    check.ctx(ctx, "new JournalStore(ctx)");
    check.options(options, "JournalStore options");
    const maxChunkBytes = check.count(
      options.maxChunkBytes,
      "maxChunkBytes",
      DEFAULT_MAX_CHUNK_BYTES,
      {
        min: 6,
      },
    );
    check.callback(options.now, "now");
    check.callback(options.onEvent, "onEvent");
    this.#storage = ctx.storage;
    this.#sql = ctx.storage.sql;
    let counters = JournalStore.#counters.get(ctx.storage);
    if (counters === undefined) {
      counters = new Map();
      JournalStore.#counters.set(ctx.storage, counters);
    }
    this.#lastSeq = counters;
    this.#chunkUnits = Math.floor(maxChunkBytes / 3);
    this.#now = options.now ?? Date.now;
    this.#emit = createEmitter("@durablekit/handle-journal", options.onEvent);
    migrateSchema(ctx.storage, {
      table: "journal",
      steps: SCHEMA_STEPS,
      packageName: "@durablekit/handle-journal",
      tooNew: (message) => new JournalError("journal/schema-too-new", message),
    });
  }

  // ── Recording ──────────────────────────────────────────────────────────────

  /**
   * Records one call in one transaction: one row, plus one chunk row per `maxChunkBytes` of a
   * longer payload. Record before delivering the outcome, so a restart never re-runs a call whose
   * result someone already saw.
   * @throws JournalError `journal/conflict` when the key is already recorded for the execution;
   *   `journal/invalid-argument` for a malformed key, execution id, outcome or payload;
   *   `journal/storage` when SQLite fails.
   */
  record(entry: JournalRecord): JournalRecordResult {
    if (typeof entry !== "object" || entry === null) {
      throw invalid(
        "record takes a JournalRecord: { executionId, key, module, method, argsDigest, outcome, payload }.",
      );
    }
    const { executionId, key, outcome, payload } = entry;
    checkExecutionId(executionId);
    journalCheck.key(key);
    journalCheck.outcome(outcome);
    journalCheck.payload(payload);
    journalCheck.recordedAt(entry.recordedAt);
    if (
      typeof entry.module !== "string" ||
      typeof entry.method !== "string" ||
      typeof entry.argsDigest !== "string"
    ) {
      throw invalid("A JournalRecord's module, method and argsDigest must be strings.");
    }
    const seq = this.#nextSeq(executionId);
    const parts = this.#split(payload);
    let rowsWritten = 0;
    try {
      // One transaction: the entry row and all its chunk rows, or nothing.
      this.#storage.transactionSync(() => {
        rowsWritten += this.#sql.exec(
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
          entry.recordedAt ?? this.#now(),
        ).rowsWritten;
        if (parts !== undefined) {
          for (let i = 0; i < parts.length; i++) {
            rowsWritten += this.#sql.exec(
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
          "journal/conflict",
          `Call ${key} of execution ${executionId} is already recorded; a call key is recorded once. Replay it instead of running it again.`,
          { cause: error },
        );
      }
      throw new JournalError(
        "journal/storage",
        `Recording call ${key} of execution ${executionId} failed; retry.`,
        { cause: error },
      );
    }
    // Only a committed entry advances the counter, so a failed record reuses its seq.
    this.#lastSeq.set(executionId, seq);
    const chunks = parts?.length ?? 0;
    this.#emit({ type: "journal:recorded", executionId, key, seq, outcome, chunks });
    return { seq, chunks, rowsWritten };
  }

  #nextSeq(executionId: string): number {
    let last = this.#lastSeq.get(executionId);
    if (last === undefined) {
      const row = this.#sql
        .exec<{ last: number | null }>(
          "SELECT MAX(seq) AS last FROM dk_journal_entries WHERE execution_id = ?",
          executionId,
        )
        .toArray()[0];
      last = row?.last ?? 0;
    }
    return last + 1;
  }

  /** The chunks of a payload too long for one row, or `undefined` when it fits. */
  #split(payload: string | null): string[] | undefined {
    return payload !== null && payload.length > this.#chunkUnits
      ? splitText(payload, this.#chunkUnits)
      : undefined;
  }

  // ── Reading ────────────────────────────────────────────────────────────────

  /**
   * Every entry of an execution in recorded order, in one query; `[]` for an unknown execution.
   * @throws JournalError `journal/invalid-argument` for a malformed execution id;
   *   `journal/corrupt` when chunk rows are missing.
   */
  entries(executionId: string): JournalEntry[] {
    checkExecutionId(executionId);
    return collectEntries(
      executionId,
      this.#sql.exec(SELECT_ENTRIES, executionId).raw() as Iterable<EntryRow>,
    );
  }

  /** {@link JournalPort.lookup}: the same as {@link entries}. */
  lookup(executionId: string): JournalEntry[] {
    return this.entries(executionId);
  }

  /**
   * One entry, or `null` when the key is not recorded.
   * @throws JournalError `journal/invalid-argument` for a malformed execution id or key.
   */
  entry(executionId: string, key: string): JournalEntry | null {
    checkExecutionId(executionId);
    journalCheck.key(key);
    return (
      collectEntries(
        executionId,
        this.#sql.exec(SELECT_ENTRY, executionId, key).raw() as Iterable<EntryRow>,
      )[0] ?? null
    );
  }

  // ── Rewriting ──────────────────────────────────────────────────────────────

  /**
   * Replaces the outcome of a pending entry (an `interrupt` a resume answers, or an `unsafe` marker
   * whose call ended) in one transaction: outcome, payload and chunk rows together, `seq` kept.
   * `recordedAt` (epoch ms, default the store's clock) becomes the entry's time. Returns false,
   * writing nothing, when the key is not recorded as `interrupt` or `unsafe`.
   * @throws JournalError `journal/invalid-argument` for a malformed execution id, key, outcome,
   *   payload or time; `journal/storage` when SQLite fails.
   */
  resolve(
    executionId: string,
    key: string,
    outcome: JournalOutcomeKind,
    payload: string | null,
    recordedAt?: number,
  ): boolean {
    checkExecutionId(executionId);
    journalCheck.key(key);
    journalCheck.outcome(outcome);
    journalCheck.payload(payload);
    journalCheck.recordedAt(recordedAt);
    const parts = this.#split(payload);
    let updated = false;
    try {
      this.#storage.transactionSync(() => {
        const cursor = this.#sql.exec(
          `UPDATE dk_journal_entries SET outcome = ?, payload = ?, chunks = ?, recorded_at = ?
             WHERE execution_id = ? AND call_key = ? AND outcome IN ('interrupt', 'unsafe')`,
          outcome,
          parts === undefined ? payload : null,
          parts === undefined ? 0 : parts.length,
          recordedAt ?? this.#now(),
          executionId,
          key,
        );
        updated = cursor.rowsWritten > 0;
        if (!updated) return;
        // The old chunks go in the same transaction as the new row, so no reader sees a mix.
        this.#sql.exec(
          "DELETE FROM dk_journal_chunks WHERE execution_id = ? AND call_key = ?",
          executionId,
          key,
        );
        if (parts !== undefined) {
          for (let i = 0; i < parts.length; i++)
            this.#sql.exec(INSERT_CHUNK, executionId, key, i, parts[i] as string);
        }
      });
    } catch (error) {
      throw new JournalError(
        "journal/storage",
        `Resolving call ${key} of execution ${executionId} failed; retry.`,
        { cause: error },
      );
    }
    if (updated) this.#emit({ type: "journal:resolved", executionId, key, outcome });
    return updated;
  }

  /**
   * Deletes an execution's whole journal in one transaction; returns how many entries it had.
   * @throws JournalError `journal/invalid-argument` for a malformed execution id.
   */
  deleteExecution(executionId: string): number {
    checkExecutionId(executionId);
    let deleted = 0;
    this.#storage.transactionSync(() => {
      this.#sql.exec("DELETE FROM dk_journal_chunks WHERE execution_id = ?", executionId);
      deleted = this.#sql.exec(
        "DELETE FROM dk_journal_entries WHERE execution_id = ?",
        executionId,
      ).rowsWritten;
    });
    this.#lastSeq.delete(executionId);
    this.#emit({ type: "journal:execution-deleted", executionId, entries: deleted });
    return deleted;
  }
}
