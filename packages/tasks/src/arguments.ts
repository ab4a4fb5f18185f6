import { createOptionChecks, isWellFormedName } from "@durablekit/compose";
import { TasksError } from "./errors";

/** The longest name (UTF-16 code units) of a definition, step, run id, idempotency key or event type. */
const MAX_NAME = 256;
/** Definition and step names share a namespace with internal ones; this prefix is reserved. */
const RESERVED_PREFIX = "__dk";

/**
 * Checks a name at the door (docs/composing.md, "Names"): a non-empty string of at most 256 UTF-16
 * code units with no lone surrogate and — for definition and step names, which share a namespace
 * with internal ones — not starting with the reserved `__dk` prefix.
 *
 * @param what - names the argument in the message, e.g. `A run id`.
 * @throws TasksError `tasks/invalid-argument`.
 */
export function checkName(name: unknown, what: string, reserved = true): asserts name is string {
  if (!isWellFormedName(name, MAX_NAME)) {
    const shown =
      typeof name === "string"
        ? `"${name.slice(0, 40)}${name.length > 40 ? "…" : ""}"`
        : String(name);
    throw new TasksError(
      "tasks/invalid-argument",
      `${what} must be a non-empty string of at most ${MAX_NAME} characters with no lone surrogate; got ${shown}.`,
    );
  }
  if (reserved && name.startsWith(RESERVED_PREFIX)) {
    throw new TasksError(
      "tasks/invalid-argument",
      `${what} "${name}" uses the reserved prefix "${RESERVED_PREFIX}"; pick another name.`,
    );
  }
}

/** The door checks of `@durablekit/compose`, throwing `tasks/invalid-argument`. */
export const check = createOptionChecks(
  (message) => new TasksError("tasks/invalid-argument", message),
);

/**
 * Checks a required duration in milliseconds: a finite number ≥ 0, floored to whole milliseconds.
 *
 * @param what - names the option in the message, e.g. `claimTimeoutMs`.
 * @throws TasksError `tasks/invalid-argument`.
 */
export function checkMs(value: unknown, what: string): number {
  if (value === undefined) {
    throw new TasksError(
      "tasks/invalid-argument",
      `${what} must be a number of milliseconds; got undefined.`,
    );
  }
  return check.ms(value, what, 0);
}

/**
 * Checks that an options argument is an object (or absent).
 *
 * @throws TasksError `tasks/invalid-argument`.
 */
export function checkOptions(value: unknown, what: string): void {
  check.options(value as object | undefined, what);
}
