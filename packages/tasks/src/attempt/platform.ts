/**
 * Platform failures are failures of the runtime, not of the step: an isolate replaced by a deploy,
 * a memory-limit reset, a storage reset or a dropped connection to storage. Thrown by the handler's
 * own code they never settle a run as failed: the attempt is abandoned and the claim deadline
 * replays the run on a healthy isolate. An error thrown by a step callback is that step's failure
 * whatever its properties; only a reset ({@link isPlatformReset}) abandons from inside a step. Classification follows the Durable Objects error-handling guidance (`retryable` /
 * `overloaded` properties) and the runtime's reset messages.
 */
const RESET =
  /reset because its code was updated|this script has been upgraded|exceeded its memory limit|storage caused object to be reset/i;
const TRANSIENT = /network connection lost/i;

function messageOf(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

/** An isolate or storage reset: nothing in this isolate can succeed any more. */
export function isPlatformReset(thrown: unknown): boolean {
  return RESET.test(messageOf(thrown));
}

/**
 * A transient platform failure that a later attempt may get past: a reset, a lost connection, or an
 * error the runtime marked `retryable` (and not `overloaded`).
 */
export function isPlatformFailure(thrown: unknown): boolean {
  if (isPlatformReset(thrown) || TRANSIENT.test(messageOf(thrown))) return true;
  if (typeof thrown !== "object" || thrown === null) return false;
  const flags = thrown as { retryable?: unknown; overloaded?: unknown; code?: unknown };
  // Our own retryable errors (a step timeout) are step failures, not platform failures.
  if (typeof flags.code === "string" && flags.code.startsWith("tasks/")) return false;
  return flags.retryable === true && flags.overloaded !== true;
}
