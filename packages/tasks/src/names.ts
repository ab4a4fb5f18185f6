import { TasksError } from "./errors";

const MAX_NAME = 256;
const RESERVED_PREFIX = "__dk";

/**
 * Validates a name: non-empty, at most 256 characters and — for definition and step names, which
 * share a namespace with internal ones — not starting with the reserved `__dk` prefix.
 */
export function validateName(name: unknown, what: string, reserved = true): asserts name is string {
  if (typeof name !== "string" || name.length === 0) {
    throw new TasksError("tasks/invalid-name", `${what} must be a non-empty string.`);
  }
  if (name.length > MAX_NAME) {
    throw new TasksError(
      "tasks/invalid-name",
      `${what} "${name.slice(0, 40)}…" is longer than ${MAX_NAME} characters.`,
    );
  }
  if (reserved && name.startsWith(RESERVED_PREFIX)) {
    throw new TasksError(
      "tasks/invalid-name",
      `${what} "${name}" uses the reserved prefix "${RESERVED_PREFIX}"; pick another name.`,
    );
  }
}
