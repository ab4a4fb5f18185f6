import { checkMs, checkOptions } from "./arguments";
import { TasksError } from "./errors";

/** How the delay between step attempts grows. */
export type TaskBackoff = "constant" | "linear" | "exponential";

/** Retry policy of a step: total attempts, first delay and its growth. */
export interface TaskRetryOptions {
  /** Total attempts including the first; an integer ≥ 1. */
  limit?: number;
  /** Delay before the first retry, in milliseconds. */
  delayMs?: number;
  /** `constant` (d), `linear` (d·n) or `exponential` (d·2^(n-1)) after the n-th failed attempt. */
  backoff?: TaskBackoff;
  /**
   * What a step whose attempts are all used up does: `"fail"` (the default) fails the step, and the
   * run unless the handler catches it; `"pause"` holds the run at the step instead (`paused`, its
   * last error in the attempt's row), so an operator can fix the cause and `resume` it: the step
   * then runs once more, and pauses again if that attempt fails too. A `NonRetryableError`, and a
   * result too large or unserializable, fail the step either way.
   */
  onExhausted?: "fail" | "pause";
}

/** A resolved step policy. */
export interface StepPolicy {
  limit: number;
  delayMs: number;
  backoff: TaskBackoff;
  timeoutMs: number;
  onExhausted: "fail" | "pause";
}

/** The longest delay between two attempts: backoff growth stops at one day. */
export const MAX_RETRY_DELAY_MS = 86_400_000;

/** Defaults of every step: 5 attempts, 1 s exponential backoff, 5 minute attempt timeout. */
export const DEFAULT_STEP_POLICY: StepPolicy = {
  limit: 5,
  delayMs: 1_000,
  backoff: "exponential",
  timeoutMs: 300_000,
  onExhausted: "fail",
};

/**
 * Resolves retry options and a timeout over a base policy.
 *
 * @throws TasksError `tasks/invalid-argument` for a bad limit, backoff or duration.
 */
export function resolvePolicy(
  base: StepPolicy,
  retries: TaskRetryOptions | undefined,
  timeoutMs: number | undefined,
  what: string,
): StepPolicy {
  checkOptions(retries, `${what} retries`);
  const limit = retries?.limit ?? base.limit;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new TasksError(
      "tasks/invalid-argument",
      `Invalid ${what} retries.limit: expected an integer ≥ 1 (total attempts), got ${limit}.`,
    );
  }
  const backoff = retries?.backoff ?? base.backoff;
  if (backoff !== "constant" && backoff !== "linear" && backoff !== "exponential") {
    throw new TasksError(
      "tasks/invalid-argument",
      `Invalid ${what} retries.backoff: expected "constant", "linear" or "exponential", got ${JSON.stringify(backoff)}.`,
    );
  }
  const onExhausted = retries?.onExhausted ?? base.onExhausted;
  if (onExhausted !== "fail" && onExhausted !== "pause") {
    throw new TasksError(
      "tasks/invalid-argument",
      `Invalid ${what} retries.onExhausted: expected "fail" or "pause", got ${JSON.stringify(onExhausted)}.`,
    );
  }
  return {
    limit,
    backoff,
    onExhausted,
    delayMs:
      retries?.delayMs === undefined
        ? base.delayMs
        : checkMs(retries.delayMs, `${what} retries.delayMs`),
    timeoutMs: timeoutMs === undefined ? base.timeoutMs : checkMs(timeoutMs, `${what} timeoutMs`),
  };
}

/** The delay before the attempt after the `failedAttempt`-th one (1-based), capped at one day. */
export function retryDelay(policy: StepPolicy, failedAttempt: number): number {
  const factor =
    policy.backoff === "constant"
      ? 1
      : policy.backoff === "linear"
        ? failedAttempt
        : 2 ** (failedAttempt - 1);
  return Math.min(policy.delayMs * factor, MAX_RETRY_DELAY_MS);
}
