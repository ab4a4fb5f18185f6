/*
 * The public option and report types of flow control and schedules: plain data, imported by the
 * definitions, the schedules and the event types alike (so none of them imports another).
 */

/** How a definition's runs share slots: at most `limit` in progress at once per flow key. */
export interface TaskConcurrency {
  /** Runs of one key in progress at once (accepted, not settled, not queued): 1 to 10,000. */
  limit: number;
  /**
   * What a new run does when its key has no free slot (or runs already wait): `"queue"` waits in
   * order (the default); `"keep-latest"` cancels the runs of the key still waiting and waits in
   * their place (the newest wins); `"refuse"` throws `tasks/busy`, writing nothing.
   */
  onBusy?: "queue" | "keep-latest" | "refuse";
}

/** At most `limit` runs of a flow key started per `periodMs` (a sliding window). */
export interface TaskRateLimit {
  /** Starts per window: 1 to 1,000. */
  limit: number;
  /** The window, in milliseconds (≥ 1). */
  periodMs: number;
  /**
   * What a run does over the limit: `"queue"` waits for its slot (the default), `"refuse"` throws
   * `tasks/rate-limited`, writing nothing.
   */
  onLimited?: "queue" | "refuse";
}

/**
 * Runs of one flow key started within `periodMs` of each other collapse into one run with the
 * latest input, which starts once the key has been quiet for `periodMs`, or `maxDelayMs` after the
 * first of them.
 */
export interface TaskDebounce {
  /** The quiet period, in milliseconds (≥ 1). */
  periodMs: number;
  /** The longest a run waits from its first call (default: no limit but `periodMs` per call). */
  maxDelayMs?: number;
}

/**
 * A cron schedule of a definition: each tick starts one run of it with `input`, exactly once.
 * Ticks are computed with the `croner` library (five fields: minute, hour, day of month, month,
 * day of week; `@hourly`, `@daily`… nicknames), in `timezone`.
 */
export interface TaskSchedule<Input = unknown> {
  /** The schedule's id (≤ 256 characters; default `<definition>:<cron>`). Its runs' ids start with it. */
  id?: string;
  /** A five-field cron expression, e.g. `"*\/5 * * * *"`. */
  cron: string;
  /** The input of every run it starts. */
  input?: Input;
  /** An IANA time zone (`"Europe/Paris"`); default UTC. */
  timezone?: string;
  /**
   * A tick while the schedule's last run is still in progress: `"skip"` starts nothing (counted
   * in `skipped`; the default), `"queue"` starts it behind that run (it waits, `queued`, until the
   * run before it settles).
   */
  overlap?: "skip" | "queue";
  /**
   * How many ticks missed while the object was down (its alarm came late) still start, newest
   * first, besides the latest (default 0: each missed tick is counted in `missed` and skipped).
   * At most 1,000.
   */
  backfill?: number;
}

/** A schedule as `schedules()` reports it. */
export interface TaskScheduleSnapshot {
  scheduleId: string;
  definition: string;
  cron: string;
  /** IANA time zone; `"UTC"` when none was given. */
  timezone: string;
  overlap: "skip" | "queue";
  backfill: number;
  /** `"definition"`: declared on its definition; `"api"`: added by `tasks.schedule`. */
  source: "definition" | "api";
  /** The next tick, epoch ms. */
  nextTickAt: number;
  /** The latest tick taken (a run started, or skipped for overlap), or null before the first. */
  lastTickAt: number | null;
  /** The run the latest started tick started, or null. */
  lastRunId: string | null;
  /** Ticks skipped after downtime, beyond `backfill` (at most 1,000 counted per outage). */
  missed: number;
  /** Ticks skipped because the schedule's last run was still in progress (`overlap: "skip"`). */
  skipped: number;
}

/** A pass over one schedule's due ticks: what it did (the `task:schedule:ticked` event). */
export interface TaskScheduleTick {
  scheduleId: string;
  definition: string;
  tickAt: number;
  runIds: string[];
  missed: number;
  skipped: number;
}
