import type { TaskScheduleSnapshot } from "../flow/options";

/** One row of `dk_tasks_schedules`. */
export interface ScheduleRow {
  schedule_id: string;
  definition: string;
  cron: string;
  /** IANA time zone; null for UTC. */
  timezone: string | null;
  /** Codec text of the input of every run it starts. */
  input: string;
  overlap: "skip" | "queue";
  backfill: number;
  /** `definition`: declared on a definition (kept in step with the code); `api`: `tasks.schedule`. */
  source: "definition" | "api";
  /** The next tick it has not taken. */
  next_at: number;
  last_tick_at: number | null;
  last_run_id: string | null;
  /** Ticks skipped after downtime (beyond `backfill`). */
  missed: number;
  /** Ticks skipped because the last run was still in progress (`overlap: "skip"`). */
  skipped: number;
  created_at: number;
  updated_at: number;
}

/** What a schedule's definition (or `tasks.schedule`) sets; the rest is what its ticks did. */
export type ScheduleSpec = Pick<
  ScheduleRow,
  "schedule_id" | "definition" | "cron" | "timezone" | "input" | "overlap" | "backfill" | "source"
>;

/** The SQL of `dk_tasks_schedules`: one statement per method. */
export class ScheduleStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  get(scheduleId: string): ScheduleRow | undefined {
    return this.#sql
      .exec<ScheduleRow & Record<string, SqlStorageValue>>(
        "SELECT * FROM dk_tasks_schedules WHERE schedule_id = ?",
        scheduleId,
      )
      .toArray()[0];
  }

  /** Every schedule, by id (or those of one `source`). */
  list(source?: ScheduleRow["source"]): ScheduleRow[] {
    return this.#sql
      .exec<ScheduleRow & Record<string, SqlStorageValue>>(
        source === undefined
          ? "SELECT * FROM dk_tasks_schedules ORDER BY schedule_id"
          : "SELECT * FROM dk_tasks_schedules WHERE source = ? ORDER BY schedule_id",
        ...(source === undefined ? [] : [source]),
      )
      .toArray();
  }

  /**
   * Every schedule as `schedules()` reports it (or the one of `scheduleId`), by id: read in the
   * snapshot's own shape (a time zone left out reads as `"UTC"`).
   */
  snapshots(scheduleId?: string): TaskScheduleSnapshot[] {
    return this.#sql
      .exec<TaskScheduleSnapshot & Record<string, SqlStorageValue>>(
        `SELECT schedule_id AS scheduleId, definition, cron, coalesce(timezone, 'UTC') AS timezone,
           overlap, backfill, source, next_at AS nextTickAt, last_tick_at AS lastTickAt,
           last_run_id AS lastRunId, missed, skipped
         FROM dk_tasks_schedules ${scheduleId === undefined ? "" : "WHERE schedule_id = ?"}
         ORDER BY schedule_id`,
        ...(scheduleId === undefined ? [] : [scheduleId]),
      )
      .toArray();
  }

  /**
   * Writes a schedule's spec; a new schedule (or one whose cron or time zone changed: `retime`)
   * takes `nextAt` as its next tick, and keeps what its ticks did.
   */
  put(spec: ScheduleSpec, nextAt: number, retime: boolean, now: number): void {
    this.#sql.exec(
      `INSERT INTO dk_tasks_schedules
         (schedule_id, definition, cron, timezone, input, overlap, backfill, source, next_at,
          created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (schedule_id) DO UPDATE SET definition = excluded.definition,
         cron = excluded.cron, timezone = excluded.timezone, input = excluded.input,
         overlap = excluded.overlap, backfill = excluded.backfill, source = excluded.source,
         next_at = CASE WHEN ? THEN excluded.next_at ELSE next_at END, updated_at = excluded.updated_at`,
      spec.schedule_id,
      spec.definition,
      spec.cron,
      spec.timezone,
      spec.input,
      spec.overlap,
      spec.backfill,
      spec.source,
      nextAt,
      now,
      now,
      retime ? 1 : 0,
    );
  }

  /** Records a pass over a schedule's due ticks: its next tick and what the ticks did. */
  ticked(
    scheduleId: string,
    nextAt: number,
    last: { tickAt: number; runId: string | null } | null,
    missed: number,
    skipped: number,
    now: number,
  ): void {
    this.#sql.exec(
      `UPDATE dk_tasks_schedules SET next_at = ?, last_tick_at = coalesce(?, last_tick_at),
         last_run_id = coalesce(?, last_run_id), missed = missed + ?, skipped = skipped + ?,
         updated_at = ?
       WHERE schedule_id = ?`,
      nextAt,
      last?.tickAt ?? null,
      last?.runId ?? null,
      missed,
      skipped,
      now,
      scheduleId,
    );
  }

  delete(scheduleId: string): boolean {
    return (
      this.#sql.exec("DELETE FROM dk_tasks_schedules WHERE schedule_id = ?", scheduleId)
        .rowsWritten > 0
    );
  }

  /** Schedules with a tick due at `now`, earliest first. */
  due(now: number, limit: number): ScheduleRow[] {
    return this.#sql
      .exec<ScheduleRow & Record<string, SqlStorageValue>>(
        "SELECT * FROM dk_tasks_schedules WHERE next_at <= ? ORDER BY next_at LIMIT ?",
        now,
        limit,
      )
      .toArray();
  }

  /** The earliest next tick of any schedule, or null. */
  nextWakeAt(): number | null {
    return (
      this.#sql
        .exec<{ at: number | null }>("SELECT min(next_at) AS at FROM dk_tasks_schedules")
        .toArray()[0]?.at ?? null
    );
  }
}
