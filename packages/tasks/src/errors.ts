import {
  DurableKitError,
  type DurableKitErrorOptions,
  type ErrorCodeOf,
  errorGuard,
} from "@durablekit/compose";

/**
 * Stable codes of every error this package throws or records. A code never changes meaning; new
 * failure kinds get new codes. The words shared with every durablekit package (`invalid-argument`,
 * `unserializable`, `too-large`, `too-deep`, `not-found`, `conflict`, `closed`, `diverged`,
 * `schema-too-new`) mean what docs/composing.md says they mean.
 *
 * Refused requests (nothing was written):
 * - `tasks/invalid-argument`: an argument or option that is malformed or out of range: a definition,
 *   step, run id, idempotency key or event type name that is empty, over 256 characters, has a lone
 *   surrogate or (definitions and steps) uses the reserved `__dk` prefix; a duration, retry limit,
 *   backoff, page limit, paging cursor or size limit out of range.
 * - `tasks/unknown-definition`: `run()` named a definition that is not in the definitions map.
 * - `tasks/conflict`: a run id or idempotency key already belongs to another definition, or the pair
 *   names two different runs; a second `Tasks` over the same object (construct parts once, in the
 *   constructor).
 * - `tasks/unserializable`: an input, metadata, step result, event payload or run result the codec
 *   cannot carry (a function, a symbol, a cycle, a class instance).
 * - `tasks/too-large`: such a value is over `maxValueBytes` encoded.
 * - `tasks/too-deep`: such a value nests deeper than the codec allows.
 * - `tasks/not-found`: `sendEvent()` named a run that does not exist.
 * - `tasks/closed`: `sendEvent()` named a run that is already completed, failed or cancelled.
 * - `tasks/schema-too-new`: the `dk_tasks_*` tables were written by a newer version of this package,
 *   or a child-run message is of a newer protocol version (the sender retries it until a deploy).
 * - `tasks/busy`: `run()` of a definition with `concurrency.onBusy: "refuse"` found its flow key's
 *   slots in use (or runs waiting for them); retryable: try again once one settles.
 * - `tasks/rate-limited`: `run()` of a definition with `rateLimit.onLimited: "refuse"` found its flow
 *   key's window full; retryable: the message says when the next slot frees.
 * - `tasks/forbidden`: a child-run message (`tasks.receive`) did not prove it belongs to the exchange
 *   it names (its secret, or the child it names, is not the exchange's); answered, never thrown.
 *
 * Recorded on a run (the run fails, the code is in its snapshot's `error.code`):
 * - `tasks/missing-definition`: the run's definition is no longer registered (removed by a deploy).
 * - `tasks/duplicate-step`: one attempt used a step name twice.
 * - `tasks/diverged`: the journal holds a step of another kind (or event type) at a name.
 * - `tasks/step-limit`: the run journaled more steps than `maxStepsPerRun`.
 * - `tasks/too-many-attempts`: `maxAttemptsWithoutProgress` attempts in a row ended (the object died or
 *   was reset, or the attempt was abandoned) without journaling a step.
 * - `tasks/non-retryable`: a step threw a {@link NonRetryableError}.
 * - `tasks/run-timeout`: the run passed its `deadlineMs` (across attempts, sleeps and waits).
 *
 * Thrown into the run's handler (the handler may catch them):
 * - `tasks/step-timeout`: a step attempt outlived its timeout (retryable: the step's retry policy applies).
 * - `tasks/event-timeout`: `step.waitForEvent` reached its timeout before an event arrived.
 * - `tasks/cancelled`: the error of a child run that was cancelled, as `step.awaitChildren` reports it.
 */
export type TasksErrorCode = ErrorCodeOf<
  "tasks",
  | "invalid-argument"
  | "conflict"
  | "unserializable"
  | "too-large"
  | "too-deep"
  | "not-found"
  | "closed"
  | "schema-too-new"
  | "diverged",
  | "unknown-definition"
  | "busy"
  | "rate-limited"
  | "forbidden"
  | "missing-definition"
  | "duplicate-step"
  | "step-limit"
  | "too-many-attempts"
  | "non-retryable"
  | "step-timeout"
  | "event-timeout"
  | "cancelled"
  | "run-timeout"
>;

/**
 * Base class of every error this package throws (a `DurableKitError`, see docs/composing.md).
 * `code` is stable and survives RPC (it is an own property); `retryable` says whether repeating
 * the failed operation may succeed. `tasks/step-timeout`, `tasks/busy` and `tasks/rate-limited` are
 * retryable; every other code is terminal.
 */
export class TasksError extends DurableKitError<TasksErrorCode> {
  static override readonly retryableCodes: readonly TasksErrorCode[] = [
    "tasks/step-timeout",
    "tasks/busy",
    "tasks/rate-limited",
  ];
  override readonly name: string = "TasksError";
}

/**
 * True when `value` is a {@link TasksError} (or one of its subclasses), optionally with the given
 * code. Errors rebuilt from a run's journal (a failed step rethrown on replay) are plain errors
 * with the same `name` and `code`: match those by `code`.
 */
export const isTasksError = errorGuard(TasksError);

/**
 * Thrown by a step callback to fail the step (and, unless the handler catches it, the run) at once,
 * skipping the remaining retry attempts. An error of any class whose `name` is `"NonRetryableError"`
 * (for example one from `cloudflare:workflows`) is honoured the same way.
 */
export class NonRetryableError extends TasksError {
  override readonly name: string = "NonRetryableError";
  constructor(message: string, options?: DurableKitErrorOptions) {
    super("tasks/non-retryable", message, options);
  }
}

/** True when a thrown value asks to skip the remaining retry attempts of its step. */
export function isNonRetryable(thrown: unknown): boolean {
  return thrown instanceof Error && thrown.name === "NonRetryableError";
}

/** A step name used twice within one attempt. Step names are journal keys and must be unique per run. */
export class DuplicateStepError extends TasksError {
  override readonly name: string = "DuplicateStepError";
  /** The repeated step name. */
  readonly step: string;

  constructor(step: string) {
    super(
      "tasks/duplicate-step",
      `Step name "${step}" was already used in this run. Step names are journal keys; give each call its own name, e.g. "${step}:1" inside a loop.`,
    );
    this.step = step;
  }
}

/** The journal holds something at a step name that this handler code cannot have written (`tasks/diverged`). */
export class ReplayDivergedError extends TasksError {
  override readonly name: string = "ReplayDivergedError";
  /** The step name where the replay diverged. */
  readonly step: string;

  constructor(step: string, detail: string) {
    super(
      "tasks/diverged",
      `Replay diverged from the journal at step "${step}": ${detail}. Do not change the steps of a definition that has runs in flight; register the new code under a new versioned name (e.g. "name@v2").`,
    );
    this.step = step;
  }
}

/** A run whose definition is no longer registered: it fails visibly and is never run by other code. */
export class MissingDefinitionError extends TasksError {
  override readonly name: string = "MissingDefinitionError";
  /** The definition name the run was accepted under. */
  readonly definition: string;

  constructor(definition: string) {
    super(
      "tasks/missing-definition",
      `No task definition named "${definition}" is registered. A deploy removed or renamed it while this run was in flight; keep the old definition registered until its runs settle.`,
    );
    this.definition = definition;
  }
}

/** One step attempt outlived its timeout. The step's retry policy decides what happens next. */
export class StepTimeoutError extends TasksError {
  override readonly name: string = "StepTimeoutError";
  constructor(step: string, attempt: number, timeoutMs: number) {
    super(
      "tasks/step-timeout",
      `Step "${step}" attempt ${attempt} timed out after ${timeoutMs} ms. Raise the step's \`timeoutMs\` or make the callback honour its abort signal sooner.`,
    );
  }
}

/** `step.waitForEvent` reached its timeout before an event of its type arrived. */
export class EventTimeoutError extends TasksError {
  override readonly name: string = "EventTimeoutError";
  /** The event type the step waited for. */
  readonly eventType: string;

  constructor(step: string, eventType: string) {
    super(
      "tasks/event-timeout",
      `Step "${step}" waited for an event of type "${eventType}" and timed out. Send it with tasks.sendEvent(runId, "${eventType}", payload) before the timeout, or catch this error to continue without it.`,
    );
    this.eventType = eventType;
  }
}

/** The run passed the deadline `run(…, { deadlineMs })` gave it: it fails, wherever it was. */
export class RunTimeoutError extends TasksError {
  override readonly name: string = "RunTimeoutError";
  constructor(runId: string, deadlineAt: number) {
    super(
      "tasks/run-timeout",
      `Run "${runId}" passed its deadline (${new Date(deadlineAt).toISOString()}) and was stopped. Give it a longer deadlineMs, or restart it (restart(runId, { from })) to go on.`,
    );
  }
}
