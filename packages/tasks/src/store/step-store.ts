import { boundedColumn, type TaskTruncatedValue, truncatedOf } from "../truncated";
import {
  type CallRow,
  COMPENSATION_PREFIX,
  type StepRow,
  type TaskInterruptedStep,
  VERSION_MARKER_PREFIX,
} from "./rows";
import type { RunLogStore } from "./run-log-store";

/**
 * The longest name + value (in characters) of a completed `do` row that is loaded packed. Rows over
 * it come back one by one, so a packed chunk stays far below SQLite's 2 MB string limit: at most
 * 128 rows × (1,024 characters × at most 6 bytes escaped) ≈ 0.8 MB per array.
 */
const PACKED_MAX_CHARS = 1024;
/** Packed rows per chunk, as a shift of `seq` (seq is unique within a run): 2^7 = 128. */
const CHUNK_SHIFT = 7;

/** A completed `do` row that travels packed: what a journal hit reads, and nothing else. */
const PACKED = `(kind = 'do' AND state = 'completed' AND wake_at IS NULL AND event_type IS NULL
  AND length(name) + ifnull(length(value), 0) <= ${PACKED_MAX_CHARS})`;

/**
 * The journal of a run in one statement. Crossing from SQLite into JavaScript costs about half a
 * microsecond per row whatever its width, more than a replayed step's other work, so completed `do`
 * rows (the journal hits) come back packed (tag 0): one row per 128 of them, holding JSON arrays of
 * their names and values and their highest seq — all a hit reads. Every other row comes back whole
 * (tag 1). The calls recorded through the run's step journals (`dk_tasks_calls`) come back whole
 * too (tag 3), in the same statement: a program's journal costs no query of its own. Columns are
 * positional: the tag, then the fields of the row's kind.
 */
const LOAD = `SELECT 0, json_group_array(name), json_group_array(value), max(seq),
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, max(ev)
  FROM dk_tasks_steps WHERE run_id = ?1 AND ${PACKED} GROUP BY seq >> ${CHUNK_SHIFT}
UNION ALL
SELECT 1, name, seq, kind, state, attempt, value, wake_at, event_type, next_step, at, ev
  FROM dk_tasks_steps WHERE run_id = ?1 AND NOT ${PACKED}
UNION ALL
SELECT 3, journal, call_key, seq, execution_id, module, method, args_digest, outcome, payload, at, NULL
  FROM dk_tasks_calls WHERE run_id = ?1`;

/**
 * Appended on a reclaim (tag 2): the step a dead attempt left mid-execution, from the journal's
 * in-flight evidence — a `do` row still `running`, or a `next_step` naming a step that has no row
 * (it started right after that row was written and never finished). The newest evidence wins: a
 * running row orders at its seq, a dangling `next_step` just after the row that names it.
 */
const INTERRUPTED = `
UNION ALL
SELECT * FROM (
  SELECT 2, name, attempt, seq AS ord, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM dk_tasks_steps WHERE run_id = ?1 AND kind = 'do' AND state = 'running'
  UNION ALL
  SELECT 2, s.next_step, 1, s.seq + 0.5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM dk_tasks_steps AS s
   WHERE s.run_id = ?1 AND s.next_step IS NOT NULL AND NOT EXISTS (
     SELECT 1 FROM dk_tasks_steps AS t WHERE t.run_id = ?1 AND t.name = s.next_step)
  ORDER BY ord DESC LIMIT 1)`;

/** The completed `do` rows of one packed chunk: names and values as parallel arrays. */
export interface PackedSteps {
  names: string[];
  values: (string | null)[];
  /** The highest seq of the chunk. */
  maxSeq: number;
}

/** The journal rows whose value a bounded read may leave unread: results and event payloads. */
const BOUNDED_ROW = "state = 'completed' AND kind <> 'sleep'";

/**
 * The bytes of the values a bounded read has returned whole up to and including this row, in step
 * order: a window over the sizes SQL keeps in each record's header (no value is read for it).
 */
const RETURNED_SO_FAR = `sum(CASE WHEN ${BOUNDED_ROW} AND octet_length(value) <= ?2 THEN octet_length(value) ELSE 0 END) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING)`;

/**
 * A run's journal rows with each result over a bound (`?2`) left unread, and every result after the
 * results returned whole reach a total (`?3`): only a completed step's value (its result, or an
 * event's payload) is bounded; error records come back whole.
 */
const LIST_BOUNDED = `SELECT name, seq, kind, state, attempt,
    ${boundedColumn("value", BOUNDED_ROW, `${RETURNED_SO_FAR} > ?3`)},
    wake_at, event_type, next_step, at
  FROM dk_tasks_steps WHERE run_id = ?1`;

/** A journal row of a bounded read: `value` is null when the row's result was left unread. */
export interface BoundedStepRow extends StepRow {
  /** The result's stand-in when it was over the bound, else null. */
  truncated: TaskTruncatedValue | null;
}

/** A run's journal as one statement returns it (see {@link Journal}). */
export interface JournalLoad {
  packed: PackedSteps[];
  rows: StepRow[];
  /** The calls recorded through the run's step journals, in no particular order. */
  calls: CallRow[];
  /** Computed only when asked for (a reclaim); null otherwise or when nothing was in flight. */
  interrupted: TaskInterruptedStep | null;
  /** The highest event number a journal row carries (see `RunLogStore`); null when none does. */
  maxEvent: number | null;
}

/**
 * A whole journal row from a `raw()` result: its ten columns in table order (name, seq, kind,
 * state, attempt, value, wake_at, event_type, next_step, at), starting at column `from`.
 */
function readStepRow(r: SqlStorageValue[], from: number): StepRow {
  return {
    name: r[from] as string,
    seq: r[from + 1] as number,
    kind: r[from + 2] as StepRow["kind"],
    state: r[from + 3] as StepRow["state"],
    attempt: r[from + 4] as number,
    value: r[from + 5] as string | null,
    wake_at: r[from + 6] as number | null,
    event_type: r[from + 7] as string | null,
    next_step: r[from + 8] as string | null,
    at: r[from + 9] as number,
  };
}

/** A row of the load's tag-3 arm: a call of a step journal, its columns after the tag. */
type CallColumns = [
  tag: 3,
  journal: string,
  key: string,
  seq: number,
  executionId: string,
  module: string,
  method: string,
  argsDigest: string,
  outcome: string,
  payload: string | null,
  at: number,
];

function readCallRow(r: SqlStorageValue[]): CallRow {
  const [, journal, key, seq, executionId, module, method, argsDigest, outcome, payload, at] =
    r as CallColumns;
  return { journal, key, seq, executionId, module, method, argsDigest, outcome, payload, at };
}

const UPSERT_STEP = `INSERT INTO dk_tasks_steps
    (run_id, name, seq, kind, state, attempt, value, wake_at, event_type, next_step, at, ev)`;
const ON_STEP_CONFLICT = `ON CONFLICT (run_id, name) DO UPDATE SET
    state = excluded.state, attempt = excluded.attempt, value = excluded.value,
    wake_at = excluded.wake_at, event_type = excluded.event_type,
    next_step = excluded.next_step, at = excluded.at, ev = excluded.ev`;

function stepParams(runId: string, row: StepRow, ev: number | null): SqlStorageValue[] {
  return [
    runId,
    row.name,
    row.seq,
    row.kind,
    row.state,
    row.attempt,
    row.value,
    row.wake_at,
    row.event_type,
    row.next_step,
    row.at,
    ev,
  ];
}

/**
 * The SQL of `dk_tasks_steps`, the journal: one statement per method (the replay's load is the
 * packed query above). Fenced writes take the attempt's generation and return false when
 * another attempt holds the run.
 */
export class StepStore {
  readonly #sql: SqlStorage;
  readonly #log: RunLogStore;

  constructor(sql: SqlStorage, log: RunLogStore) {
    this.#sql = sql;
    this.#log = log;
  }

  /**
   * The event number a row being written takes: the run's next one for a settled step (completed
   * or failed), none for a row still running or waiting, or for a version marker (a decision of
   * the code, not of the run).
   */
  #eventOf(runId: string, row: StepRow): number | null {
    if (row.state !== "completed" && row.state !== "failed") return null;
    if (row.name.startsWith(VERSION_MARKER_PREFIX)) return null;
    return this.#log.next(runId);
  }

  /**
   * A write of `rowsWritten` rows that stored event `ev` (if any) moves the run's sequence on;
   * `row`, when given, is the row it wrote (what a tailing reader reads for it).
   */
  #stored(runId: string, ev: number | null, rowsWritten: number, row?: StepRow): boolean {
    if (rowsWritten === 0) return false;
    if (ev !== null) {
      const settled = row?.state === "completed" || row?.state === "failed";
      this.#log.took(
        runId,
        ev,
        row === undefined || !settled
          ? undefined
          : {
              source: "step",
              ev,
              at: row.at,
              name: row.name,
              kind: row.kind,
              state: row.state as "completed" | "failed",
              attempt: row.attempt,
              error: row.state === "failed" ? row.value : null,
            },
      );
    }
    return true;
  }

  /**
   * The journal of a run for a replay — its steps and the calls of its step journals — in one query
   * ({@link LOAD}); with `reclaim`, the same query also finds the step a dead attempt left in flight
   * ({@link INTERRUPTED}). It also tells the run's event sequence where its journal rows end.
   */
  loadJournal(runId: string, reclaim: boolean): JournalLoad {
    const load: JournalLoad = {
      packed: [],
      rows: [],
      calls: [],
      interrupted: null,
      maxEvent: null,
    };
    for (const r of this.#sql.exec(reclaim ? LOAD + INTERRUPTED : LOAD, runId).raw()) {
      const ev = r[11] as number | null;
      if (ev !== null && (load.maxEvent === null || ev > load.maxEvent)) load.maxEvent = ev;
      if (r[0] === 0) {
        load.packed.push({
          names: JSON.parse(r[1] as string) as string[],
          values: JSON.parse(r[2] as string) as (string | null)[],
          maxSeq: r[3] as number,
        });
      } else if (r[0] === 1) {
        load.rows.push(readStepRow(r, 1));
      } else if (r[0] === 3) {
        load.calls.push(readCallRow(r));
      } else {
        load.interrupted = { name: r[1] as string, attempt: r[2] as number };
      }
    }
    this.#log.seed(runId, load.maxEvent);
    return load;
  }

  /** Every journal row of a run, whole, for snapshots. Rows come back as arrays (`raw()`). */
  listSteps(runId: string): StepRow[] {
    const rows: StepRow[] = [];
    const cursor = this.#sql
      .exec(
        `SELECT name, seq, kind, state, attempt, value, wake_at, event_type, next_step, at
         FROM dk_tasks_steps WHERE run_id = ?`,
        runId,
      )
      .raw();
    for (const r of cursor) rows.push(readStepRow(r, 0));
    return rows;
  }

  /**
   * Every journal row of a run, with each result whose stored text is over `maxBytes` returned as
   * its size and preview instead, and so is every result once those returned whole reach
   * `maxTotalBytes` in step order ({@link LIST_BOUNDED}): what a view of a run with large values reads.
   */
  listStepsBounded(
    runId: string,
    maxBytes: number,
    maxTotalBytes = Number.MAX_SAFE_INTEGER,
  ): BoundedStepRow[] {
    const rows: BoundedStepRow[] = [];
    for (const r of this.#sql.exec(LIST_BOUNDED, runId, maxBytes, maxTotalBytes).raw()) {
      // Columns: the row's first five, value, its size and preview, then the last four.
      const row = readStepRow([...r.slice(0, 6), ...r.slice(8)], 0);
      rows.push({ ...row, truncated: truncatedOf(r[6], r[7]) });
    }
    return rows;
  }

  /**
   * One journal row, written only if `generation` still holds the run. One row written. `exists`
   * says whether the row may already be stored (then it is an upsert); the hot path — a completed
   * `do` step journaled for the first time — uses a plain insert with fewer bindings.
   */
  writeStepFenced(runId: string, generation: string, row: StepRow, exists: boolean): boolean {
    const ev = this.#eventOf(runId, row);
    if (!exists && row.kind === "do" && row.state === "completed" && row.wake_at === null) {
      return this.#stored(
        runId,
        ev,
        this.#sql.exec(
          `INSERT INTO dk_tasks_steps (run_id, name, seq, kind, state, attempt, value, next_step, at, ev)
           SELECT ?1, ?2, ?3, 'do', 'completed', ?4, ?5, ?6, ?7, ?9
           WHERE EXISTS (SELECT 1 FROM dk_tasks_runs WHERE run_id = ?1 AND generation = ?8)`,
          runId,
          row.name,
          row.seq,
          row.attempt,
          row.value,
          row.next_step,
          row.at,
          generation,
          ev,
        ).rowsWritten,
        row,
      );
    }
    return this.#stored(
      runId,
      ev,
      this.#sql.exec(
        `${UPSERT_STEP} SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
         WHERE EXISTS (SELECT 1 FROM dk_tasks_runs WHERE run_id = ? AND generation = ?)
         ${ON_STEP_CONFLICT}`,
        ...stepParams(runId, row, ev),
        runId,
        generation,
      ).rowsWritten,
      row,
    );
  }

  /** One journal row, unfenced: for use inside a transaction whose run write was fenced. */
  writeStep(runId: string, row: StepRow): void {
    const ev = this.#eventOf(runId, row);
    this.#stored(
      runId,
      ev,
      this.#sql.exec(
        `${UPSERT_STEP} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${ON_STEP_CONFLICT}`,
        ...stepParams(runId, row, ev),
      ).rowsWritten,
      row,
    );
  }
  /** Completes the waiting event row at `step` with the delivered payload. */
  completeWaiting(runId: string, step: string, payload: string, now: number): void {
    const ev = this.#log.next(runId);
    this.#stored(
      runId,
      ev,
      this.#sql.exec(
        `UPDATE dk_tasks_steps SET state = 'completed', value = ?, at = ?, ev = ?
         WHERE run_id = ? AND name = ? AND state = 'waiting'`,
        payload,
        now,
        ev,
        runId,
        step,
      ).rowsWritten,
    );
  }

  /** The journal position (`seq`) of step `name` of a run, or null when it has no row. */
  seqOf(runId: string, name: string): number | null {
    const row = this.#sql
      .exec<{ seq: number }>(
        "SELECT seq FROM dk_tasks_steps WHERE run_id = ? AND name = ?",
        runId,
        name,
      )
      .toArray()[0];
    return row?.seq ?? null;
  }

  /**
   * The first step (in journal order) before position `fromSeq` whose compensation completed, or
   * null: a restart from `fromSeq` would keep a step as done that was undone. One range of the
   * run's compensation rows, each joined to its step by primary key.
   */
  undoneBefore(runId: string, fromSeq: number): string | null {
    const row = this.#sql
      .exec<{ name: string }>(
        `SELECT s.name FROM dk_tasks_steps AS u
           JOIN dk_tasks_steps AS s ON s.run_id = u.run_id AND s.name = substr(u.name, ?3)
         WHERE u.run_id = ?1 AND u.name >= ?4 AND u.name < ?5 AND u.state = 'completed'
           AND s.seq < ?2
         ORDER BY s.seq LIMIT 1`,
        runId,
        fromSeq,
        COMPENSATION_PREFIX.length + 1,
        COMPENSATION_PREFIX,
        // The first string after every name with the prefix (":" + 1 is ";").
        `${COMPENSATION_PREFIX.slice(0, -1)};`,
      )
      .toArray()[0];
    return row?.name ?? null;
  }

  /**
   * Drops a run's journal rows from position `fromSeq` on (a restart), in two statements: the rows
   * before it forget a dropped row named as their next step (it is no longer evidence of anything),
   * then the rows go. Answers how many were dropped.
   */
  dropFrom(runId: string, fromSeq: number): number {
    this.#sql.exec(
      `UPDATE dk_tasks_steps SET next_step = NULL
       WHERE run_id = ?1 AND seq < ?2
         AND next_step IN (SELECT name FROM dk_tasks_steps WHERE run_id = ?1 AND seq >= ?2)`,
      runId,
      fromSeq,
    );
    return this.#sql.exec(
      "DELETE FROM dk_tasks_steps WHERE run_id = ? AND seq >= ?",
      runId,
      fromSeq,
    ).rowsWritten;
  }

  /** Deletes a run's journal. */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_steps WHERE run_id = ?", runId);
  }
}
