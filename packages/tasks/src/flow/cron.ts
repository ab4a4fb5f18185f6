import { Cron } from "croner";
import { TasksError } from "../errors";

/**
 * The ticks of a five-field cron expression in a time zone, computed with `croner` (zero
 * dependencies, maintained, time zones through `Intl`, day-of-month and day-of-week OR-ed as in
 * Vixie cron). Only reads: no timer is ever started.
 */
export class CronTicks {
  readonly #cron: Cron;

  /**
   * @throws TasksError `tasks/invalid-argument` for an expression that is not five fields of valid
   *   cron (or a nickname such as `@hourly`), or an unknown time zone.
   */
  constructor(expression: unknown, timezone: unknown, what: string) {
    if (typeof expression !== "string" || expression.length > 256) {
      throw new TasksError(
        "tasks/invalid-argument",
        `${what} cron must be a five-field cron expression such as "*/5 * * * *"; got ${String(expression).slice(0, 60)}.`,
      );
    }
    if (timezone !== undefined && (typeof timezone !== "string" || timezone.length > 64)) {
      throw new TasksError(
        "tasks/invalid-argument",
        `${what} timezone must be an IANA time zone name such as "Europe/Paris".`,
      );
    }
    try {
      this.#cron = new Cron(expression, {
        paused: true,
        mode: "5-part",
        ...(timezone === undefined ? { timezone: "Etc/UTC" } : { timezone }),
      });
      // An unknown time zone is found when a tick is first computed.
      this.#cron.nextRun(new Date(0));
    } catch (error) {
      throw new TasksError(
        "tasks/invalid-argument",
        `${what} cron ${JSON.stringify(expression)}${timezone === undefined ? "" : ` in time zone ${JSON.stringify(timezone)}`} is not valid: five fields (minute hour day-of-month month day-of-week, e.g. "*/5 * * * *") or a nickname such as "@hourly", and an IANA time zone. ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }

  /** The first tick strictly after `after` (epoch ms), or null when the expression has no more. */
  next(after: number): number | null {
    return this.#cron.nextRun(new Date(after))?.getTime() ?? null;
  }

  /** The newest `count` ticks at or before `at`, oldest first. */
  latest(count: number, at: number): number[] {
    return this.#cron
      .previousRuns(count, new Date(at + 1))
      .map((tick) => tick.getTime())
      .reverse();
  }
}
