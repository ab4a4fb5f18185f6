import { check, checkName } from "../arguments";
import { TasksError } from "../errors";
import type { TaskStep } from "../types";
import type { TaskConcurrency, TaskDebounce, TaskRateLimit, TaskSchedule } from "./options";

/**
 * A definition with options: its handler and how its runs are admitted. Any of `concurrency`,
 * `rateLimit` and `debounce` makes its runs flow-controlled: they are counted per flow key (the
 * `key` of their input, or one key for the definition), and a run that must wait is `queued`,
 * ordered by `priority` (higher first), then start order. Write it with {@link defineTask} so that
 * `key` and `schedules` are typed from the handler's input.
 */
export interface TaskDefinition<Input = never, Output = unknown> {
  /** The handler: `(input, step) => result`, replayed from the top on every attempt. */
  handler: (input: Input, step: TaskStep) => Output;
  /** The flow key of a run from its input (≤ 256 characters); default one key for the definition. */
  key?: (input: Input) => string;
  concurrency?: TaskConcurrency;
  rateLimit?: TaskRateLimit;
  debounce?: TaskDebounce;
  /** The default priority of its runs (an integer; `run(…, { priority })` overrides it): 0. */
  priority?: number;
  /** Cron schedules that start its runs from the object's alarm. */
  schedules?: readonly TaskSchedule<Input>[];
}

/**
 * Types a definition with options from its handler's input: `key` and each schedule's `input` are
 * checked against it. Returns the definition as given.
 *
 * ```ts
 * const send = defineTask({
 *   handler: async (input: { to: string }, step) => step.do("send", () => mail(input.to)),
 *   key: (input) => input.to,
 *   concurrency: { limit: 1 },
 * });
 * ```
 */
export function defineTask<Input, Output>(
  definition: TaskDefinition<Input, Output>,
): TaskDefinition<Input, Output> {
  return definition;
}

/** A definition as the engine keeps it: its handler and its admission rules, checked. */
export interface ResolvedDefinition {
  readonly name: string;
  readonly handler: (input: unknown, step: TaskStep) => unknown;
  /** Null when its runs are not flow-controlled. */
  readonly flow: FlowRule | null;
  readonly priority: number;
  readonly schedules: readonly TaskSchedule[];
}

/** The admission rules of a flow-controlled definition, checked. */
export interface FlowRule {
  readonly key: ((input: unknown) => unknown) | null;
  readonly concurrency: Required<TaskConcurrency> | null;
  readonly rateLimit: Required<TaskRateLimit> | null;
  readonly debounce: Required<TaskDebounce> | null;
}

const DEFINITION_FIELDS = new Set([
  "handler",
  "key",
  "concurrency",
  "rateLimit",
  "debounce",
  "priority",
  "schedules",
]);

/**
 * Checks one entry of the definitions map (a handler, or a {@link TaskDefinition}) and resolves it.
 *
 * @throws TasksError `tasks/invalid-argument` naming the definition and the option at fault.
 */
export function resolveDefinition(name: string, entry: unknown): ResolvedDefinition {
  checkName(name, "A definition name");
  if (typeof entry === "function") {
    return {
      name,
      handler: entry as ResolvedDefinition["handler"],
      flow: null,
      priority: 0,
      schedules: [],
    };
  }
  if (
    typeof entry !== "object" ||
    entry === null ||
    typeof (entry as TaskDefinition).handler !== "function"
  ) {
    throw new TasksError(
      "tasks/invalid-argument",
      `Definition "${name}" must be a handler (input, step) => result, or { handler, …options }.`,
    );
  }
  const given = entry as TaskDefinition<unknown, unknown>;
  for (const field of Object.keys(given)) {
    if (!DEFINITION_FIELDS.has(field)) {
      throw new TasksError(
        "tasks/invalid-argument",
        `Definition "${name}" has an unknown option "${field}"; its options are ${[...DEFINITION_FIELDS].join(", ")}.`,
      );
    }
  }
  const what = (option: string) => `definition "${name}" ${option}`;
  check.callback(given.key, what("key"));
  const concurrency =
    given.concurrency === undefined
      ? null
      : {
          limit: limitOf(given.concurrency, what("concurrency"), 10_000),
          onBusy: check.oneOf(
            given.concurrency.onBusy,
            `${what("concurrency")}.onBusy`,
            ["queue", "keep-latest", "refuse"] as const,
            "queue",
          ),
        };
  const rateLimit =
    given.rateLimit === undefined
      ? null
      : {
          limit: limitOf(given.rateLimit, what("rateLimit"), 1_000),
          periodMs: check.ms(given.rateLimit.periodMs, `${what("rateLimit")}.periodMs`, 0, {
            min: 1,
          }),
          onLimited: check.oneOf(
            given.rateLimit.onLimited,
            `${what("rateLimit")}.onLimited`,
            ["queue", "refuse"] as const,
            "queue",
          ),
        };
  if (rateLimit !== null && given.rateLimit?.periodMs === undefined) {
    throw new TasksError("tasks/invalid-argument", `${what("rateLimit")}.periodMs is required.`);
  }
  let debounce: Required<TaskDebounce> | null = null;
  if (given.debounce !== undefined) {
    check.options(given.debounce, what("debounce"));
    if (given.debounce.periodMs === undefined) {
      throw new TasksError("tasks/invalid-argument", `${what("debounce")}.periodMs is required.`);
    }
    const periodMs = check.ms(given.debounce.periodMs, `${what("debounce")}.periodMs`, 0, {
      min: 1,
    });
    const maxDelayMs = check.ms(
      given.debounce.maxDelayMs,
      `${what("debounce")}.maxDelayMs`,
      Number.MAX_SAFE_INTEGER,
      { min: periodMs },
    );
    debounce = { periodMs, maxDelayMs };
  }
  const priority = priorityOf(given.priority, what("priority"));
  const flowed = concurrency !== null || rateLimit !== null || debounce !== null;
  if (given.key !== undefined && !flowed) {
    throw new TasksError(
      "tasks/invalid-argument",
      `${what("key")} keys concurrency, rateLimit or debounce; give one of them, or drop key.`,
    );
  }
  if (given.schedules !== undefined && !Array.isArray(given.schedules)) {
    throw new TasksError("tasks/invalid-argument", `${what("schedules")} must be an array.`);
  }
  return {
    name,
    handler: given.handler as ResolvedDefinition["handler"],
    flow: flowed
      ? { key: (given.key as FlowRule["key"]) ?? null, concurrency, rateLimit, debounce }
      : null,
    priority,
    schedules: (given.schedules ?? []) as readonly TaskSchedule[],
  };
}

/** A run's priority: an integer in ±1,000,000 (default `fallback`). */
export function priorityOf(value: unknown, what: string, fallback = 0): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || Math.abs(value) > 1_000_000) {
    throw new TasksError(
      "tasks/invalid-argument",
      `${what} must be an integer from -1000000 to 1000000; got ${String(value)}.`,
    );
  }
  return value;
}

function limitOf(rule: { limit?: unknown } | undefined, what: string, max: number): number {
  check.options(rule as object | undefined, what);
  const limit = rule?.limit;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new TasksError(
      "tasks/invalid-argument",
      `${what}.limit must be an integer from 1 to ${max}; got ${String(limit)}.`,
    );
  }
  return limit;
}
