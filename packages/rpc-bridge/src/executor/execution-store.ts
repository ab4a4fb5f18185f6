import { migrateSchema } from "@durablekit/compose";
import {
  callIdOf,
  DEFAULT_MAX_CHUNK_BYTES,
  decode,
  type JournalErrorRecord,
  splitText,
} from "@durablekit/handle-journal";
import type { BridgeAccess, BridgeInterruptPolicy } from "../context";
import { BridgeError } from "../errors";
import type { BridgeReplayFingerprint } from "../replay/fingerprint";
import type {
  BridgeExecutionError,
  BridgeExecutionRecord,
  BridgeExecutionState,
} from "./execution";

/** Migration steps of the `dk_bridge_*` tables; the schema version is their count (see DESIGN.md). */
const SCHEMA_STEPS = [
  [
    `CREATE TABLE IF NOT EXISTS dk_bridge_executions (
      id TEXT PRIMARY KEY,
      state TEXT NOT NULL,
      on_interrupt TEXT NOT NULL,
      access TEXT NOT NULL,
      source TEXT NOT NULL,
      input TEXT NOT NULL, -- handle-journal codec text
      attempt INTEGER NOT NULL,
      calls INTEGER NOT NULL DEFAULT 0,
      unsafe_call TEXT,
      result TEXT, -- handle-journal codec text
      error TEXT, -- JSON of the error record's body
      created_at INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      finished_at INTEGER
    )`,
    `CREATE INDEX IF NOT EXISTS dk_bridge_executions_state ON dk_bridge_executions (state)`,
  ],
  // Step 2: replay runs (seed and fingerprint made at start; where an interrupted run waits; the
  // journal's size when the latest attempt started; whether the journal is the caller's own).
  [
    "ALTER TABLE dk_bridge_executions ADD COLUMN seed TEXT",
    "ALTER TABLE dk_bridge_executions ADD COLUMN fingerprint TEXT", // JSON, see fingerprint.ts
    "ALTER TABLE dk_bridge_executions ADD COLUMN interrupt_key TEXT",
    "ALTER TABLE dk_bridge_executions ADD COLUMN interrupt_payload TEXT", // handle-journal codec text
    "ALTER TABLE dk_bridge_executions ADD COLUMN journal_size INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE dk_bridge_executions ADD COLUMN external_journal INTEGER NOT NULL DEFAULT 0",
  ],
  // Step 3: texts longer than a row may hold (SQLite refuses a row over 2 MB) are split over chunk
  // rows; `chunked` has the bit of each such column (see LONG_FIELDS), whose own value is then ''.
  [
    `CREATE TABLE IF NOT EXISTS dk_bridge_chunks (
      execution_id TEXT NOT NULL,
      field TEXT NOT NULL,
      part INTEGER NOT NULL,
      data TEXT NOT NULL,
      PRIMARY KEY (execution_id, field, part)
    )`,
    "ALTER TABLE dk_bridge_executions ADD COLUMN chunked INTEGER NOT NULL DEFAULT 0",
  ],
  // Step 4: executions listed newest first (`Executor.list`), keyset-paged by (created_at, id).
  [
    "CREATE INDEX IF NOT EXISTS dk_bridge_executions_by_created ON dk_bridge_executions (created_at, id)",
  ],
] as const;

/**
 * The columns whose text may outgrow a row (each bounded by a limit a host may raise:
 * `maxSourceBytes`, `maxInputBytes`, `maxResultBytes`, `maxInterruptBytes`), with their bit in
 * `chunked`.
 */
const LONG_FIELDS = {
  source: 1,
  input: 2,
  result: 4,
  error: 8,
  interrupt_payload: 16,
} as const;
type LongField = keyof typeof LONG_FIELDS;

/**
 * A text longer than this many UTF-16 code units is split into chunk rows of at most this many: a
 * code unit is at most 3 UTF-8 bytes, so a chunk stays within handle-journal's
 * `DEFAULT_MAX_CHUNK_BYTES` (1.5 MB), under SQLite's 2 MB row limit.
 */
const CHUNK_UNITS = Math.floor(DEFAULT_MAX_CHUNK_BYTES / 3);

/** Version of the `dk_bridge_*` tables; a newer stored version is refused rather than misread. */
export const SCHEMA_VERSION = SCHEMA_STEPS.length;

type Row = {
  id: string;
  state: string;
  on_interrupt: string;
  access: string;
  source: string;
  input: string;
  attempt: number;
  calls: number;
  unsafe_call: string | null;
  result: string | null;
  error: string | null;
  created_at: number;
  started_at: number;
  finished_at: number | null;
  seed: string | null;
  fingerprint: string | null;
  interrupt_key: string | null;
  interrupt_payload: string | null;
  journal_size: number;
  external_journal: number;
  chunked: number;
};

/** A running execution's row, as recovery needs it. */
export interface RunningExecution {
  id: string;
  onInterrupt: BridgeInterruptPolicy;
  access: BridgeAccess;
  source: string;
  input: string;
  attempt: number;
  unsafeCall: string | null;
  startedAt: number;
  /** Replay runs: the seed of the isolate's randomness. */
  seed: string | null;
  /** Replay runs: what the program saw (JSON), compared on recovery. */
  fingerprint: string | null;
  /** Replay runs: journal entries when the latest attempt started. */
  journalSize: number;
  /** Replay runs whose journal was given to `execute` (re-attached by their owner, never recovered here). */
  externalJournal: boolean;
}

/** Any execution's row, as `resume` and re-attaching need it. */
export interface StoredExecution extends RunningExecution {
  state: BridgeExecutionState;
  interruptKey: string | null;
}

function stored(row: Row): StoredExecution {
  return {
    id: row.id,
    state: row.state as BridgeExecutionState,
    onInterrupt: row.on_interrupt as BridgeInterruptPolicy,
    access: row.access as BridgeAccess,
    source: row.source,
    input: row.input,
    attempt: row.attempt,
    unsafeCall: row.unsafe_call,
    startedAt: row.started_at,
    seed: row.seed,
    fingerprint: row.fingerprint,
    journalSize: row.journal_size,
    externalJournal: row.external_journal === 1,
    interruptKey: row.interrupt_key,
  };
}

/** What one write stores: the column values (a long text's is `''`) and its chunk rows. */
interface LongTexts {
  values: Partial<Record<LongField, string | null>>;
  /** The `chunked` bits of the columns whose text went to chunk rows. */
  bits: number;
  parts: Array<[LongField, string[]]>;
}

/**
 * The executor's SQLite tables (`dk_bridge_*`). Each state change is one SQL statement, hence one
 * implicit transaction, or, when a text is longer than a row may hold, that statement and its
 * chunk rows in one explicit transaction: an eviction never tears a change in two, and no value a
 * limit admits is refused by SQLite (which would leave a run `running` for ever).
 */
export class ExecutionStore {
  readonly #storage: DurableObjectStorage;
  readonly #sql: SqlStorage;

  /** @throws BridgeError `bridge/schema-too-new` when the tables were written by a newer version. */
  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = storage.sql;
    const options = {
      table: "bridge",
      steps: SCHEMA_STEPS,
      packageName: "@durablekit/rpc-bridge",
      tooNew: (message: string) => new BridgeError("bridge/schema-too-new", message),
    };
    try {
      migrateSchema(storage, options);
    } catch (error) {
      // A 0.0 build named the meta table's first column `key`; rename it to the shared convention once.
      if (!(error instanceof Error) || !/no such column: name/.test(error.message)) throw error;
      this.#sql.exec("ALTER TABLE dk_bridge_meta RENAME COLUMN key TO name");
      migrateSchema(storage, options);
    }
  }

  // ── Long texts ───────────────────────────────────────────────────────────

  /** Which of `texts` fit a row as they are and which go to chunk rows. */
  #longTexts(texts: Partial<Record<LongField, string | null>>): LongTexts {
    const out: LongTexts = { values: {}, bits: 0, parts: [] };
    for (const [field, text] of Object.entries(texts) as Array<[LongField, string | null]>) {
      if (text === null || text.length <= CHUNK_UNITS) {
        out.values[field] = text;
        continue;
      }
      out.values[field] = "";
      out.bits |= LONG_FIELDS[field];
      out.parts.push([field, splitText(text, CHUNK_UNITS)]);
    }
    return out;
  }

  /**
   * Runs `write` (one statement storing `long.values`) and writes `long`'s chunk rows with it, in
   * one transaction when there are any.
   */
  #write<T>(id: string, long: LongTexts, write: () => T): T {
    if (long.parts.length === 0) return write();
    return this.#storage.transactionSync(() => {
      const out = write();
      for (const [field, parts] of long.parts) {
        for (let i = 0; i < parts.length; i++) {
          this.#sql.exec(
            "INSERT OR REPLACE INTO dk_bridge_chunks (execution_id, field, part, data) VALUES (?, ?, ?, ?)",
            id,
            field,
            i,
            parts[i] as string,
          );
        }
      }
      return out;
    });
  }

  /** The row with its chunked texts put back together (one more query, only for such a row). */
  #whole(row: Row): Row {
    if (row.chunked === 0) return row;
    const texts: Partial<Record<LongField, string[]>> = {};
    for (const { field, data } of this.#sql.exec<{ field: string; data: string }>(
      "SELECT field, data FROM dk_bridge_chunks WHERE execution_id = ? ORDER BY field, part",
      row.id,
    )) {
      if (!Object.hasOwn(LONG_FIELDS, field)) continue;
      const parts = texts[field as LongField] ?? [];
      parts.push(data);
      texts[field as LongField] = parts;
    }
    const whole = { ...row };
    for (const [field, bit] of Object.entries(LONG_FIELDS) as Array<[LongField, number]>) {
      if ((row.chunked & bit) !== 0) whole[field] = (texts[field] ?? []).join("");
    }
    return whole;
  }

  // ── Executions ───────────────────────────────────────────────────────────

  /** True when an execution with this id exists. */
  has(id: string): boolean {
    return (
      this.#sql.exec("SELECT 1 FROM dk_bridge_executions WHERE id = ?", id).toArray().length > 0
    );
  }

  /** Records a new running execution (attempt 1). */
  insert(row: {
    id: string;
    onInterrupt: BridgeInterruptPolicy;
    access: BridgeAccess;
    source: string;
    input: string;
    now: number;
    seed?: string;
    fingerprint?: string;
    externalJournal?: boolean;
  }): void {
    const long = this.#longTexts({ source: row.source, input: row.input });
    this.#write(row.id, long, () =>
      this.#sql.exec(
        `INSERT INTO dk_bridge_executions (id, state, on_interrupt, access, source, input, attempt, created_at, started_at, seed, fingerprint, external_journal, chunked)
         VALUES (?, 'running', ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`,
        row.id,
        row.onInterrupt,
        row.access,
        long.values.source ?? "",
        long.values.input ?? "",
        row.now,
        row.now,
        row.seed ?? null,
        row.fingerprint ?? null,
        row.externalJournal ? 1 : 0,
        long.bits,
      ),
    );
  }

  /**
   * Starts attempt `attempt` of a running execution; `started_at` keeps the first attempt's start.
   * `journalSize` is a replay run's journal entries as the attempt starts.
   */
  restart(id: string, attempt: number, journalSize = 0): void {
    this.#sql.exec(
      "UPDATE dk_bridge_executions SET attempt = ?, calls = 0, journal_size = ? WHERE id = ? AND state = 'running'",
      attempt,
      journalSize,
      id,
    );
  }

  /**
   * A running replay run was released by `ctx.interrupt()`: it waits, `interrupted`, at call `key`
   * (payload as codec text) until resumed. One statement.
   */
  suspend(id: string, key: string, payloadText: string, calls: number): void {
    const long = this.#longTexts({ interrupt_payload: payloadText });
    this.#write(id, long, () =>
      this.#sql.exec(
        `UPDATE dk_bridge_executions SET state = 'interrupted', interrupt_key = ?, interrupt_payload = ?, calls = ?,
           chunked = chunked | ?
         WHERE id = ? AND state = 'running'`,
        key,
        long.values.interrupt_payload ?? null,
        calls,
        long.bits,
        id,
      ),
    );
  }

  /**
   * An interrupted execution is resumed: running again (attempt `attempt`), one statement. False
   * when it was not interrupted (a second resume finds it running).
   */
  resume(id: string, attempt: number, journalSize: number): boolean {
    const update = () =>
      this.#sql.exec(
        `UPDATE dk_bridge_executions SET state = 'running', interrupt_key = NULL, interrupt_payload = NULL,
           attempt = ?, calls = 0, journal_size = ?, chunked = chunked & ?
         WHERE id = ? AND state = 'interrupted'`,
        attempt,
        journalSize,
        ~LONG_FIELDS.interrupt_payload,
        id,
      ).rowsWritten > 0;
    const payloadChunks = this.#sql
      .exec<{ chunked: number }>("SELECT chunked FROM dk_bridge_executions WHERE id = ?", id)
      .toArray()[0];
    if (((payloadChunks?.chunked ?? 0) & LONG_FIELDS.interrupt_payload) === 0) return update();
    // The payload's chunk rows go with it, in the same transaction.
    return this.#storage.transactionSync(() => {
      const resumed = update();
      if (resumed) {
        this.#sql.exec(
          "DELETE FROM dk_bridge_chunks WHERE execution_id = ? AND field = 'interrupt_payload'",
          id,
        );
      }
      return resumed;
    });
  }

  /** Any execution's row, or null. */
  row(id: string): StoredExecution | null {
    const row = this.#sql
      .exec<Row>("SELECT * FROM dk_bridge_executions WHERE id = ?", id)
      .toArray()[0];
    return row === undefined ? null : stored(this.#whole(row));
  }

  /** Remembers (once) that a call marked unsafeToRepeat started, which forbids a restart. */
  markUnsafe(id: string, label: string): void {
    this.#sql.exec(
      "UPDATE dk_bridge_executions SET unsafe_call = ? WHERE id = ? AND unsafe_call IS NULL",
      label,
      id,
    );
  }

  /** Ends a running execution; a second end of the same execution changes nothing. */
  finish(
    id: string,
    state: Exclude<BridgeExecutionState, "running">,
    outcome: { resultText?: string; error?: JournalErrorRecord; calls: number; now: number },
  ): void {
    const long = this.#longTexts({
      result: outcome.resultText ?? null,
      error: outcome.error === undefined ? null : JSON.stringify(outcome.error.$error),
    });
    this.#write(id, long, () =>
      this.#sql.exec(
        `UPDATE dk_bridge_executions SET state = ?, result = ?, error = ?, calls = ?, finished_at = ?,
           chunked = chunked | ?
         WHERE id = ? AND state = 'running'`,
        state,
        long.values.result ?? null,
        long.values.error ?? null,
        outcome.calls,
        outcome.now,
        long.bits,
        id,
      ),
    );
  }

  /** Executions still marked running, oldest first. */
  running(): RunningExecution[] {
    return this.#sql
      .exec<Row>("SELECT * FROM dk_bridge_executions WHERE state = 'running' ORDER BY created_at")
      .toArray()
      .map((row) => stored(this.#whole(row)));
  }

  /** Whether an execution this executor recovers (its journal not its caller's) is on disk as running. */
  hasOrphans(): boolean {
    return (
      this.#sql
        .exec(
          "SELECT 1 FROM dk_bridge_executions WHERE state = 'running' AND external_journal = 0 LIMIT 1",
        )
        .toArray().length > 0
    );
  }

  /** Whether `id` is a replay run whose journal is the executor's own (not one given to it). */
  ownsJournal(id: string): boolean {
    return (
      this.#sql
        .exec(
          "SELECT 1 FROM dk_bridge_executions WHERE id = ? AND on_interrupt = 'replay' AND external_journal = 0",
          id,
        )
        .toArray().length > 0
    );
  }

  /** One execution's record, or null. */
  get(id: string): BridgeExecutionRecord | null {
    const found = this.#sql
      .exec<Row>("SELECT * FROM dk_bridge_executions WHERE id = ?", id)
      .toArray()[0];
    return found ? this.#record(found) : null;
  }

  /**
   * Executions newest first, after `after` (the last of the previous page), in `states`: at most
   * `limit` records, one page of the `(created_at, id)` index.
   */
  list(options: {
    states: readonly BridgeExecutionState[];
    limit: number;
    after?: { createdAt: number; id: string };
  }): BridgeExecutionRecord[] {
    const where: string[] = [];
    const params: SqlStorageValue[] = [];
    if (options.after !== undefined) {
      where.push("(created_at < ? OR (created_at = ? AND id < ?))");
      params.push(options.after.createdAt, options.after.createdAt, options.after.id);
    }
    if (options.states.length > 0) {
      where.push(`state IN (${options.states.map(() => "?").join(", ")})`);
      params.push(...options.states);
    }
    return this.#sql
      .exec<Row>(
        `SELECT * FROM dk_bridge_executions ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
         ORDER BY created_at DESC, id DESC LIMIT ?`,
        ...params,
        options.limit,
      )
      .toArray()
      .map((row) => this.#record(row));
  }

  /** A row as its public record. */
  #record(found: Row): BridgeExecutionRecord {
    const row = this.#whole(found);
    const record: BridgeExecutionRecord = {
      executionId: row.id,
      state: row.state as BridgeExecutionState,
      onInterrupt: row.on_interrupt as BridgeInterruptPolicy,
      access: row.access as BridgeAccess,
      attempt: row.attempt,
      calls: row.calls,
      createdAt: row.created_at,
      startedAt: row.started_at,
    };
    if (row.finished_at !== null) record.finishedAt = row.finished_at;
    if (row.result !== null) record.result = decode(row.result);
    if (row.error !== null) record.error = JSON.parse(row.error) as BridgeExecutionError;
    if (row.unsafe_call !== null) record.unsafeCall = row.unsafe_call;
    if (row.interrupt_key !== null) {
      record.interrupt = {
        key: row.interrupt_key,
        callId: callIdOf(row.id, row.interrupt_key),
        payload: row.interrupt_payload === null ? undefined : decode(row.interrupt_payload),
      };
    }
    if (row.fingerprint !== null) {
      record.fingerprint = JSON.parse(row.fingerprint) as BridgeReplayFingerprint;
    }
    return record;
  }

  /** Deletes one execution's row and its chunk rows, whatever its state (a replay's scratch run). */
  remove(id: string): void {
    this.#storage.transactionSync(() => {
      this.#sql.exec("DELETE FROM dk_bridge_executions WHERE id = ?", id);
      this.#sql.exec("DELETE FROM dk_bridge_chunks WHERE execution_id = ?", id);
    });
  }

  /**
   * Deletes ended executions that finished before `before` (epoch ms); returns how many, and the
   * ids of the replay runs among them whose journal is the executor's own (to delete with them).
   */
  prune(before: number): { deleted: number; journals: string[] } {
    const rows = this.#storage.transactionSync(() => {
      const deleted = this.#sql
        .exec<{ id: string; replay: number; chunked: number }>(
          `DELETE FROM dk_bridge_executions WHERE state NOT IN ('running', 'interrupted') AND finished_at < ?
           RETURNING id, (on_interrupt = 'replay' AND external_journal = 0) AS replay, chunked`,
          before,
        )
        .toArray();
      for (const row of deleted) {
        if (row.chunked !== 0)
          this.#sql.exec("DELETE FROM dk_bridge_chunks WHERE execution_id = ?", row.id);
      }
      return deleted;
    });
    return { deleted: rows.length, journals: rows.filter((r) => r.replay === 1).map((r) => r.id) };
  }
}
