import { ParkedWaiters } from "@durablekit/compose";
import type { TaskStepKind, TaskStepState } from "./rows";

/** The transitions `dk_tasks_run_log` records (a settled step is its journal row instead). */
export type RunLogType =
  | "task:accepted"
  | "task:queued"
  | "task:dequeued"
  | "task:attempt:started"
  | "task:attempt:interrupted"
  | "task:step:retry"
  | "task:waiting"
  | "task:paused"
  | "task:resumed"
  | "task:restarted"
  | "task:completed"
  | "task:failed"
  | "task:cancelled";

/** One entry of a run's event sequence as stored: a log row, or a settled journal row. */
export type RunLogEntry =
  | { source: "log"; ev: number; at: number; type: RunLogType; data: string | null }
  | {
      source: "step";
      ev: number;
      at: number;
      name: string;
      kind: TaskStepKind;
      state: Extract<TaskStepState, "completed" | "failed">;
      attempt: number;
      /** The error record of a failed step; null for a completed one (its result is not an event). */
      error: string | null;
    };

/**
 * A run's events in order from `?2`: its log rows, its settled journal rows, and the settled rows
 * its restarts dropped (kept with their numbers), merged by `ev`. Each arm reads one run's range of
 * its table's primary key.
 */
const PAGE = `SELECT ev, 1 AS src, type, data, NULL, NULL, NULL, at
    FROM dk_tasks_run_log WHERE run_id = ?1 AND ev >= ?2
  UNION ALL
  SELECT ev, 0, name, kind, state, attempt, CASE WHEN state = 'failed' THEN value END, at
    FROM dk_tasks_steps WHERE run_id = ?1 AND ev >= ?2
  UNION ALL
  SELECT ev, 0, name, kind, state, attempt, CASE WHEN state = 'failed' THEN value END, at
    FROM dk_tasks_dropped_steps WHERE run_id = ?1 AND ev >= ?2
  ORDER BY ev LIMIT ?3`;

/**
 * The number a run's next event takes, read whole: one past the highest of its log rows (one
 * primary-key range) and its journal rows (a pass over them). A restart's dropped rows need no look:
 * its own log row comes after them.
 */
const NEXT = `SELECT coalesce(max(ev), -1) + 1 AS n FROM (
    SELECT max(ev) AS ev FROM dk_tasks_run_log WHERE run_id = ?1
    UNION ALL SELECT max(ev) FROM dk_tasks_steps WHERE run_id = ?1)`;

/** One past the highest log row of a run (one primary-key range), and the run's state. */
const NEXT_LOGGED = `SELECT coalesce(max(ev), -1) + 1 AS n,
    (SELECT state FROM dk_tasks_runs WHERE run_id = ?1) AS state
  FROM dk_tasks_run_log WHERE run_id = ?1`;

/** The most entries kept per followed run for its tailing readers. */
const RECENT_MAX = 1024;

/**
 * The SQL of `dk_tasks_run_log` and the tail of each run's event sequence.
 *
 * Every event of a run has a number `ev`, 0, 1, 2, … in the order it was written: a settled step
 * takes its number in its own journal row (no row of its own), every other transition one log row
 * written by the statement after the write it records, in the same synchronous block (one
 * transaction). The next number of each run is kept here once read, and moved only by a write that
 * stored it; a transaction that rolls back after taking one makes the store forget its numbers
 * ({@link forgetAll}), so they are read again. Readers parked on a run's tail are woken by each
 * number taken, and by the run's deletion.
 */
export class RunLogStore {
  readonly #sql: SqlStorage;
  readonly #next = new Map<string, number>();
  readonly #waiters = new ParkedWaiters<string>();
  /**
   * The latest entries of each run some reader in this isolate follows, in order without a gap (at
   * most {@link RECENT_MAX}): a tailing reader takes what was just written from here, not from a
   * query that passes over the run's journal. Cleared whenever it could disagree with the tables.
   */
  readonly #recent = new Map<string, { readers: number; entries: RunLogEntry[] }>();

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * The number the run's next event takes (read once per run, then kept). A journal row takes a
   * number only under a live attempt (the run `running`) or from an event delivery (which makes it
   * `pending`), and every other way out of `running` writes a log row after the attempt's steps: so
   * for a run in any other state its log alone knows the number, read by primary key. Only a
   * `running` or `pending` run this instance has not loaded costs a pass over its journal.
   */
  next(runId: string): number {
    let next = this.#next.get(runId);
    if (next === undefined) {
      const logged = this.#sql.exec<{ n: number; state: string | null }>(NEXT_LOGGED, runId).one();
      next =
        logged.state === "running" || logged.state === "pending"
          ? this.#sql.exec<{ n: number }>(NEXT, runId).one().n
          : logged.n;
      this.#next.set(runId, next);
    }
    return next;
  }

  /**
   * Learns where a run's sequence stands from its journal as an attempt loaded it (`maxEvent`, the
   * highest number a journal row carries), with its log's part read by primary key: no second pass
   * over the journal. Nothing when the number is already kept.
   */
  seed(runId: string, maxEvent: number | null): void {
    if (this.#next.has(runId)) return;
    const logged = this.#sql.exec<{ n: number }>(NEXT_LOGGED, runId).one().n;
    this.#next.set(runId, Math.max(logged, maxEvent === null ? 0 : maxEvent + 1));
  }

  /**
   * Marks `ev` as written for the run (its write stored it) and wakes the readers of its tail.
   * `entry` is what a reader reads for it; without it, the readers read the tables again.
   */
  took(runId: string, ev: number, entry?: RunLogEntry): void {
    this.#next.set(runId, ev + 1);
    const recent = this.#recent.get(runId);
    if (recent !== undefined) {
      const last = recent.entries[recent.entries.length - 1];
      if (entry === undefined || (last !== undefined && last.ev !== ev - 1)) {
        recent.entries = [];
      }
      if (entry !== undefined) {
        recent.entries.push(entry);
        if (recent.entries.length > RECENT_MAX) recent.entries.shift();
      }
    }
    this.#waiters.wake(runId);
  }

  /** A reader follows the run: its new entries are kept for it ({@link recent}) until {@link unfollow}. */
  follow(runId: string): void {
    const recent = this.#recent.get(runId);
    if (recent === undefined) this.#recent.set(runId, { readers: 1, entries: [] });
    else recent.readers++;
  }

  unfollow(runId: string): void {
    const recent = this.#recent.get(runId);
    if (recent === undefined) return;
    if (--recent.readers === 0) this.#recent.delete(runId);
  }

  /**
   * Up to `limit` entries from number `from` on, from the kept ones, when they hold `from` and
   * everything after it up to the run's last number; null otherwise (read {@link page}).
   */
  recent(runId: string, from: number, limit: number): RunLogEntry[] | null {
    const entries = this.#recent.get(runId)?.entries;
    const first = entries?.[0];
    const next = this.#next.get(runId);
    if (entries === undefined || first === undefined || next === undefined) return null;
    if (from < first.ev || from > next) return null;
    const at = from - first.ev;
    return entries.slice(at, at + limit);
  }

  /**
   * Appends one log row at the run's next number, only if the run exists (a run deleted in the same
   * block records nothing). Run right after the write it records, inside its transaction.
   */
  append(runId: string, type: RunLogType, data: object | null, now: number): void {
    const ev = this.next(runId);
    const written = this.#sql.exec(
      `INSERT INTO dk_tasks_run_log (run_id, ev, type, data, at)
       SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM dk_tasks_runs WHERE run_id = ?1)`,
      runId,
      ev,
      type,
      data === null ? null : JSON.stringify(data),
      now,
    ).rowsWritten;
    if (written > 0) {
      const text = data === null ? null : JSON.stringify(data);
      this.took(runId, ev, { source: "log", ev, at: now, type, data: text });
    }
  }

  /** Up to `limit` entries of a run's event sequence from number `from` on, in order. */
  page(runId: string, from: number, limit: number): RunLogEntry[] {
    const entries: RunLogEntry[] = [];
    for (const r of this.#sql.exec(PAGE, runId, from, limit).raw()) {
      const [ev, src, a, b, c, d, e, at] = r as [
        number,
        number,
        string,
        string | null,
        string | null,
        number | null,
        string | null,
        number,
      ];
      entries.push(
        src === 1
          ? { source: "log", ev, at, type: a as RunLogType, data: b }
          : {
              source: "step",
              ev,
              at,
              name: a,
              kind: b as TaskStepKind,
              state: c as "completed" | "failed",
              attempt: d as number,
              error: e,
            },
      );
    }
    return entries;
  }

  /** Parks `wake` on the run's tail until the next number taken (or the run's deletion). */
  park(runId: string, wake: () => void): void {
    this.#waiters.park(runId, wake);
  }

  /** Removes a waiter whose read ended. */
  unpark(runId: string, wake: () => void): void {
    this.#waiters.unpark(runId, wake);
  }

  /** Forgets every kept number (after a transaction rolled back): each is read again when next needed. */
  forgetAll(): void {
    this.#next.clear();
    for (const recent of this.#recent.values()) recent.entries = [];
  }

  /** Deletes a run's log rows; its readers wake (and find it gone). */
  deleteRun(runId: string): void {
    this.#sql.exec("DELETE FROM dk_tasks_run_log WHERE run_id = ?", runId);
    this.#next.delete(runId);
    const recent = this.#recent.get(runId);
    if (recent !== undefined) recent.entries = [];
    this.#waiters.wake(runId);
  }
}
