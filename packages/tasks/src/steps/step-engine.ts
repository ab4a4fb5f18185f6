import type { AttemptEnded } from "../attempt/signals";
import type { Flight } from "../attempt/watchdog";
import type { ChildSteps } from "../children/child-steps";
import type { TaskEvent } from "../events";
import type { StepPolicy } from "../policy";
import type { EventRow, StepRow, TaskStepKind, TaskWaitReason } from "../store/rows";
import type { TaskStepJournal } from "../types";
import type { StepBoundaries } from "./boundaries";
import type { Compensation } from "./compensation";

/**
 * The port between the steps a handler calls (`step.do`, `step.sleep`, …, see `step.ts`) and the
 * engine that owns the attempt (the `Attempt` in `attempt.ts`): every effect a step call can have
 * on the engine is a member here, and nothing else reaches it. The step decides replay semantics
 * (hit, miss, retry, park); the engine owns state, durability and fencing.
 *
 * Members that "throw the end signal" throw an {@link AttemptEnded} once the attempt is over
 * (parked, settled, superseded, abandoned): the handler unwinds and writes nothing more.
 */
export interface StepEngine {
  // ── Identity and configuration ──
  readonly runId: string;
  readonly definition: string;
  /** The run's attempt number (1 for the first). */
  readonly number: number;
  /** The generation this attempt's writes are fenced on. */
  readonly generation: string;
  /**
   * The attempt's boundary rules and the journal as loaded when it started (a hit is answered from
   * it with no SQL): `expect`, `replaying` and `newStep` are asked of it directly.
   */
  readonly boundaries: StepBoundaries;
  /** The default step policy (the `retries` and `stepTimeoutMs` options). */
  readonly defaults: StepPolicy;
  /** False when nobody listens to events: per-step events are then not even built. */
  readonly listening: boolean;
  /** How the attempt ended, or null while it is open. */
  readonly ended: AttemptEnded | null;
  /** The engine's clock (the `now` option). */
  now(): number;
  /** Emits a lifecycle event to `onEvent`. */
  emit(event: TaskEvent): void;

  // ── Boundaries: every step call passes them before it touches the journal ──
  /**
   * Checks the attempt is open, then enters the name through {@link StepBoundaries.enter} (valid,
   * unused), then that no cancel is pending (a pending cancel settles the run here). Throws the end
   * signal, the attempt's fatal error or a coded error. `internal` names an engine row (a version
   * marker, `__dk:version:<name>`) whose user-facing name was already checked.
   */
  enter(name: string, internal?: boolean): void;
  /** Marks the frontier of new ground: from here on `status()` publishes. */
  goLive(): void;

  // ── step.do ──
  /**
   * Writes a `running` row for a step whose callback returned a promise, in the turn it started.
   * False when superseded (the attempt has ended).
   */
  markInFlight(name: string, seq: number, attempt: number): boolean;
  /**
   * Watches a callback in flight for its deadline, a cancel and the end of the attempt, until the
   * returned function is called.
   */
  track(flight: Flight): () => void;
  /** Encodes a value under `maxValueBytes` (`tasks/too-large`, `tasks/unserializable`, …). */
  encode(value: unknown, path: string): string;
  /**
   * Writes a settled step's row (a completed `do` with its encoded result, a sleep already past)
   * now, before the step's promise resolves, with `extra` (when given) in the same transaction.
   * False when superseded (the attempt has ended).
   */
  record(row: StepRow, extra?: () => void): boolean;
  /**
   * Decides what a failed step attempt becomes — a retry park, a journaled failure, a cancel — and
   * returns what the step call rejects with: the rebuilt error, or the end signal.
   */
  stepFailed(
    name: string,
    seq: number,
    attempt: number,
    policy: StepPolicy,
    thrown: unknown,
  ): Error | AttemptEnded;

  /**
   * The error of a step that failed for good (journaled now or on an earlier attempt), rebuilt from
   * its record. Rethrown by the handler it fails the run, whatever its properties.
   */
  journaledFailure(record: string | null): Error;

  // ── Waits: sleeps, retries and event waits ──
  /**
   * Parks on a step that already has its row; returns the end signal to throw. `extra` (when
   * given) is written in the park's fenced transaction.
   */
  parkAgain(
    reason: TaskWaitReason,
    wakeAt: number | null,
    step: string,
    waitEvent?: string,
    extra?: () => void,
  ): AttemptEnded;
  /** Parks with a new waiting step row (and `extra`, as {@link parkAgain}); returns the end signal to throw. */
  parkNew(
    reason: TaskWaitReason,
    wakeAt: number | null,
    row: StepRow,
    waitEvent?: string,
    extra?: () => void,
  ): AttemptEnded;
  /** The oldest buffered event of a type for this run, if any. */
  peekEvent(type: string): EventRow | undefined;
  /** Completes an event wait from the buffer, consuming the event exactly once. */
  consumeEvent(name: string, seq: number, type: string, eventSeq: number, payload: string): void;
  /** Journals the terminal failure of a step that is not a `do`; returns the error to throw. */
  failStep(
    name: string,
    seq: number,
    kind: TaskStepKind,
    error: Error,
    eventType: string | null,
  ): Error;

  // ── Compensations ──
  /** A step with a compensation was called: the attempt may have steps to undo. */
  noteCompensable(): void;
  /** Keeps a completed step's compensation, for the run's failure (see {@link Compensation}). */
  registerCompensation(compensation: Compensation): void;

  // ── Step journals ──
  /**
   * The step journal `name` of the run: one object per name per attempt, over the calls the attempt
   * loaded. Throws the end signal once the attempt is over, `tasks/invalid-argument` for a bad name.
   */
  stepJournal(name: string): TaskStepJournal;

  // ── Runs in other objects ──
  /** Child runs (`startChild`, `awaitChildren`); null when the `children` option is not set. */
  children(): ChildSteps | null;

  // ── Progress ──
  /** Publishes a status message when live; replayed ground stays silent. */
  writeStatus(message: string): void;
}
