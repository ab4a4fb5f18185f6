import { check, checkName } from "../arguments";
import { TasksError } from "../errors";
import type { ScheduleRow, ScheduleSpec, ScheduleStore } from "../store/schedule-store";
import { CronTicks } from "./cron";
import type { TaskSchedule, TaskScheduleSnapshot, TaskScheduleTick } from "./options";

/** Most ticks a pass counts as missed after downtime; a longer outage reports this many. */
export const MISSED_COUNT_LIMIT = 1_000;
/** Most ticks of one pass that still start (`backfill` + the latest). */
const MAX_BACKFILL = 1_000;
/** Schedules one alarm takes; the rest stay due for the next. */
const SCHEDULES_PER_ALARM = 100;

/** One tick's run, as a pass asks for it. */
export interface ScheduledRun {
  scheduleId: string;
  definition: string;
  /** `<schedule id>@<tick ISO time>`: a tick's run is known by its id, so it starts once. */
  runId: string;
  input: string;
  tickAt: number;
  overlap: "skip" | "queue";
}

/** What {@link Schedules} needs of the engine. */
export interface SchedulesHost {
  store: ScheduleStore;
  /** Codec text of a schedule's input (checked against `maxValueBytes`). */
  encode(input: unknown, what: string): string;
  /** True when the definition exists. */
  hasDefinition(name: string): boolean;
  /** True while a run is accepted and not settled. */
  inProgress(runId: string): boolean;
  /** True when a run with this id exists. */
  exists(runId: string): boolean;
  /** Accepts one tick's run, in the pass's transaction (started after it commits). */
  accept(run: ScheduledRun): void;
}

/**
 * Cron schedules: each tick starts exactly one run, from the object's one alarm. A pass over a
 * schedule is one transaction (the runs of its ticks and the schedule's next tick), so a crash
 * leaves either both or neither; a tick's run is known by its id (`<schedule>@<tick>`), so a
 * tick taken twice starts nothing the second time. After downtime the newest `backfill` missed
 * ticks start besides the latest; the others are counted in `missed`.
 */
export class Schedules {
  readonly #host: SchedulesHost;
  readonly #ticks = new Map<string, CronTicks>();

  constructor(host: SchedulesHost) {
    this.#host = host;
  }

  /**
   * Keeps the stored schedules of the definitions in step with the code: a new or changed one is
   * written (its next tick from now when its cron or time zone changed), one no longer declared
   * is deleted. Writes nothing when nothing changed.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed schedule.
   */
  declare(
    declared: ReadonlyArray<{ definition: string; schedule: TaskSchedule }>,
    now: number,
  ): void {
    const specs = new Map<string, ScheduleSpec>();
    for (const { definition, schedule } of declared) {
      const spec = this.#spec(definition, schedule, "definition");
      if (specs.has(spec.schedule_id)) {
        throw new TasksError(
          "tasks/invalid-argument",
          `Two schedules have the id "${spec.schedule_id}"; give each an id of its own.`,
        );
      }
      specs.set(spec.schedule_id, spec);
    }
    const stored = new Map(this.#host.store.list().map((row) => [row.schedule_id, row]));
    for (const spec of specs.values()) {
      const row = stored.get(spec.schedule_id);
      if (row !== undefined && row.source === "api") {
        throw new TasksError(
          "tasks/conflict",
          `Schedule "${spec.schedule_id}" was added with tasks.schedule(); unschedule it, or give the definition's schedule another id.`,
        );
      }
      this.#write(spec, row, now);
    }
    for (const row of stored.values()) {
      if (row.source === "definition" && !specs.has(row.schedule_id)) {
        this.#host.store.delete(row.schedule_id);
      }
    }
  }

  /**
   * Adds (or replaces) a schedule of `definition` at run time, kept until {@link unschedule}.
   *
   * @throws TasksError `tasks/invalid-argument`; `tasks/conflict` for the id of a schedule
   *   declared on a definition.
   */
  add(definition: string, schedule: TaskSchedule, now: number): TaskScheduleSnapshot {
    const spec = this.#spec(definition, schedule, "api");
    const row = this.#host.store.get(spec.schedule_id);
    if (row !== undefined && row.source === "definition") {
      throw new TasksError(
        "tasks/conflict",
        `Schedule "${spec.schedule_id}" is declared on definition "${row.definition}"; change it there, or pick another id.`,
      );
    }
    this.#write(spec, row, now);
    return this.#host.store.snapshots(spec.schedule_id)[0] as TaskScheduleSnapshot;
  }

  /**
   * Takes the due ticks of due schedules at `now`: each schedule's pass is `inTransaction`
   * (accepting its ticks' runs and writing its next tick together). Answers what each pass did.
   */
  tick(now: number, inTransaction: <T>(fn: () => T) => T): TaskScheduleTick[] {
    const done: TaskScheduleTick[] = [];
    for (const row of this.#host.store.due(now, SCHEDULES_PER_ALARM)) {
      try {
        const pass = inTransaction(() => this.#pass(row, now));
        if (pass !== null) done.push(pass);
      } catch (error) {
        // A tick's run refused at the door (its definition's `key` threw, its key was busy under
        // `onBusy: "refuse"`): the pass rolled back. The schedule moves to its next tick, the ticks
        // counted as skipped, rather than failing every alarm after it.
        console.warn(
          `@durablekit/tasks: schedule "${row.schedule_id}" could not start its tick's run; skipping to its next tick.`,
          error,
        );
        const next = this.#ticksOf(row).next(now) ?? Number.MAX_SAFE_INTEGER;
        inTransaction(() => this.#host.store.ticked(row.schedule_id, next, null, 0, 1, now));
      }
    }
    return done;
  }

  /** One schedule's due ticks at `now` (see {@link tick}); null for a schedule of a gone definition. */
  #pass(row: ScheduleRow, now: number): TaskScheduleTick | null {
    const ticks = this.#ticksOf(row);
    const nextAt = ticks.next(now) ?? Number.MAX_SAFE_INTEGER;
    if (!this.#host.hasDefinition(row.definition)) {
      // Its definition is gone (a deploy removed it): its ticks start nothing until it is back.
      this.#host.store.ticked(row.schedule_id, nextAt, null, 0, 0, now);
      return null;
    }
    const kept = ticks.latest(row.backfill + 1, now).filter((at) => at >= row.next_at);
    const first = kept[0] ?? now;
    let missed = 0;
    for (let at = row.next_at; at < first && missed < MISSED_COUNT_LIMIT; missed++) {
      at = ticks.next(at) ?? Number.MAX_SAFE_INTEGER;
    }
    let skipped = 0;
    // Overlap is judged against the run started before this pass: the ticks one pass backfills
    // were asked for together and all start.
    const busy =
      row.overlap === "skip" && row.last_run_id !== null && this.#host.inProgress(row.last_run_id);
    const runIds: string[] = [];
    for (const tickAt of kept) {
      const runId = `${row.schedule_id}@${new Date(tickAt).toISOString()}`;
      if (this.#host.exists(runId)) continue;
      if (busy) {
        skipped += 1;
        continue;
      }
      this.#host.accept({
        scheduleId: row.schedule_id,
        definition: row.definition,
        runId,
        input: row.input,
        tickAt,
        overlap: row.overlap,
      });
      runIds.push(runId);
    }
    const latest = kept.at(-1);
    const last = latest === undefined ? null : { tickAt: latest, runId: runIds.at(-1) ?? null };
    this.#host.store.ticked(row.schedule_id, nextAt, last, missed, skipped, now);
    return {
      scheduleId: row.schedule_id,
      definition: row.definition,
      tickAt: latest ?? row.next_at,
      runIds,
      missed,
      skipped,
    };
  }

  /**
   * Removes a schedule added with `tasks.schedule` (a declared one goes when its definition stops
   * declaring it). False for an unknown id.
   *
   * @throws TasksError `tasks/conflict` for a schedule declared on a definition.
   */
  remove(scheduleId: string): boolean {
    const row = this.#host.store.get(scheduleId);
    if (row === undefined) return false;
    if (row.source === "definition") {
      throw new TasksError(
        "tasks/conflict",
        `Schedule "${scheduleId}" is declared on definition "${row.definition}"; remove it from the definition.`,
      );
    }
    this.#ticks.delete(scheduleId);
    return this.#host.store.delete(scheduleId);
  }

  /** Every schedule, by id. */
  list(): TaskScheduleSnapshot[] {
    return this.#host.store.snapshots();
  }

  /** The earliest next tick of any schedule, or null. */
  nextWakeAt(): number | null {
    return this.#host.store.nextWakeAt();
  }

  /** A schedule checked and stored as a spec. */
  #spec(definition: string, schedule: TaskSchedule, source: ScheduleRow["source"]): ScheduleSpec {
    check.options(schedule, `A schedule of definition "${definition}"`);
    const id = schedule.id ?? `${definition}:${String(schedule.cron)}`;
    checkName(id, "A schedule id");
    const what = `Schedule "${id}"`;
    const ticks = new CronTicks(schedule.cron, schedule.timezone, what);
    if (ticks.next(Date.now()) === null) {
      throw new TasksError("tasks/invalid-argument", `${what} cron ${schedule.cron} never ticks.`);
    }
    this.#ticks.set(id, ticks);
    const backfill = check.count(schedule.backfill, `${what} backfill`, 0, {
      min: 0,
      max: MAX_BACKFILL,
    });
    return {
      schedule_id: id,
      definition,
      cron: schedule.cron,
      timezone: schedule.timezone ?? null,
      input: this.#host.encode(schedule.input, `${what} input`),
      overlap: check.oneOf(schedule.overlap, `${what} overlap`, ["skip", "queue"] as const, "skip"),
      backfill,
      source,
    };
  }

  /** Writes `spec` when it differs from `row`; a changed cron or time zone starts from now. */
  #write(spec: ScheduleSpec, row: ScheduleRow | undefined, now: number): void {
    const same =
      row !== undefined &&
      (Object.keys(spec) as Array<keyof ScheduleSpec>).every((field) => row[field] === spec[field]);
    if (same) return;
    const retime = row === undefined || row.cron !== spec.cron || row.timezone !== spec.timezone;
    const nextAt = (this.#ticksOf(spec).next(now) ?? Number.MAX_SAFE_INTEGER) as number;
    this.#host.store.put(spec, nextAt, retime, now);
  }

  #ticksOf(spec: Pick<ScheduleRow, "schedule_id" | "cron" | "timezone">): CronTicks {
    let ticks = this.#ticks.get(spec.schedule_id);
    if (ticks === undefined) {
      ticks = new CronTicks(
        spec.cron,
        spec.timezone ?? undefined,
        `Schedule "${spec.schedule_id}"`,
      );
      this.#ticks.set(spec.schedule_id, ticks);
    }
    return ticks;
  }
}
