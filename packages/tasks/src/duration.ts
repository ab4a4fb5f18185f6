import { TasksError } from "./errors";

/** Units of a {@link DurationString}. */
export type DurationUnit = "millisecond" | "second" | "minute" | "hour" | "day" | "week";

/** A readable duration such as `"10 seconds"`, `"1 day"` or `"250 milliseconds"`. */
export type DurationString = `${number} ${DurationUnit}${"" | "s"}`;

/** A duration: milliseconds, or a {@link DurationString}. */
export type Duration = number | DurationString;

const UNIT_MS: Record<DurationUnit, number> = {
  millisecond: 1,
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
};

const PATTERN = /^(\d+(?:\.\d+)?)\s*(millisecond|second|minute|hour|day|week)s?$/;

/**
 * Parses a duration into whole milliseconds.
 *
 * @param what - names the option in the error message, e.g. `step "fetch" timeout`.
 * @throws TasksError `tasks/invalid-option` for a negative, non-finite or unreadable duration.
 */
export function parseDuration(duration: Duration, what: string): number {
  if (typeof duration === "number") {
    if (!Number.isFinite(duration) || duration < 0) {
      throw new TasksError(
        "tasks/invalid-option",
        `Invalid ${what}: expected a non-negative number of milliseconds, got ${duration}.`,
      );
    }
    return Math.floor(duration);
  }
  const match = typeof duration === "string" ? PATTERN.exec(duration.trim()) : null;
  if (!match) {
    throw new TasksError(
      "tasks/invalid-option",
      `Invalid ${what}: expected milliseconds or a duration like "10 seconds", got ${JSON.stringify(duration)}.`,
    );
  }
  return Math.floor(Number(match[1]) * UNIT_MS[match[2] as DurationUnit]);
}
