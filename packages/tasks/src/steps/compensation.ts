import type { TaskStepAttemptContext, TaskStepOptions } from "../types";

/**
 * A completed step's compensation, as an attempt collects it: from the step's `compensate` option,
 * each time the handler passes the step (live or replayed), so every attempt that fails knows all
 * of them without reading anything.
 */
export interface Compensation {
  /** The step it undoes. */
  step: string;
  /** The step call's position in the handler (its start order): compensations run in reverse. */
  order: number;
  /** The step's result, as the journal gives it back. */
  result: unknown;
  run: (result: unknown, context: TaskStepAttemptContext) => unknown;
  /** The step's own `retries` and `timeoutMs`: the compensation's policy. */
  options: Pick<TaskStepOptions, "retries" | "timeoutMs">;
}

/** The compensations to run, last started first. */
export function inReverse(compensations: readonly Compensation[]): Compensation[] {
  return [...compensations].sort((a, b) => b.order - a.order);
}
