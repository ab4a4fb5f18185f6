/** Run states as stored in `dk_tasks_runs.state`. */
export type TaskRunState =
  | "queued"
  | "pending"
  | "running"
  | "waiting"
  | "paused"
  | "completed"
  | "failed"
  | "cancelled";

/** Why a queued run waits, as stored in `dk_tasks_runs.queued_for`. */
export type TaskQueueReason = "concurrency" | "rate" | "debounce";

/** Why a waiting run waits, as stored in `dk_tasks_runs.wait_reason`. */
export type TaskWaitReason = "sleep" | "retry" | "event";

/** Kinds of journal rows, as stored in `dk_tasks_steps.kind`. */
export type TaskStepKind = "do" | "sleep" | "event";

/**
 * The stored name of a version marker: `step.version(name, …)` keeps its decision as a completed
 * `do` row named `__dk:version:<name>` whose value is the version (a number). The `__dk` prefix is
 * refused for step names, so a marker never meets a step.
 */
export const VERSION_MARKER_PREFIX = "__dk:version:";

/**
 * The stored name of a compensation: the compensation of step `<name>` (its `compensate` option) is
 * journaled as a `do` row named `__dk:undo:<name>`. The `__dk` prefix is refused for step names.
 */
export const COMPENSATION_PREFIX = "__dk:undo:";

/** Journal row states, as stored in `dk_tasks_steps.state`. */
export type TaskStepState = "running" | "waiting" | "completed" | "failed";

/** The step an unclean interruption (isolate death, platform reset) left mid-execution. */
export interface TaskInterruptedStep {
  readonly name: string;
  /** The attempt of that step that was cut short. */
  readonly attempt: number;
}

/** The settled states. A settled run never changes state again. */
export const TERMINAL_STATES: ReadonlySet<TaskRunState> = new Set<TaskRunState>([
  "completed",
  "failed",
  "cancelled",
]);

/** One row of `dk_tasks_runs`. */
export interface RunRow {
  run_id: string;
  definition: string;
  state: TaskRunState;
  /** Codec text of the input. */
  input: string;
  /** Codec text of the metadata, or null. */
  metadata: string | null;
  idempotency_key: string | null;
  /** 1 to keep the records of a completed run, 0 to delete them when it completes. */
  retain: number;
  /** Attempts claimed so far. */
  attempt: number;
  /** The fencing token of the attempt that holds the run, or null when none does. */
  generation: string | null;
  /**
   * When the run next needs a wake: the due time of a pending or waiting run, the claim deadline of a
   * running one; null when settled or when it waits for an event without a timeout.
   */
  next_at: number | null;
  wait_reason: TaskWaitReason | null;
  /** The step a run waiting for an event waits on. */
  wait_step: string | null;
  /** The event type a run waiting for an event waits for. */
  wait_event: string | null;
  status_message: string | null;
  /** Codec text of the result of a completed run. */
  result: string | null;
  /** Codec text of the error record of a failed run. */
  error: string | null;
  cancel_requested: number;
  cancel_reason: string | null;
  /** 1 when a pause was asked of the live attempt, which takes it at its next step boundary (v9). */
  pause_requested: number;
  /** When the run fails with `tasks/run-timeout` (v9); null for a run without a deadline. */
  deadline_at: number | null;
  /** 1 once a step with a compensation (`compensate`) completed (v10): a cancel replays the run to undo it. */
  compensable?: number;
  /** The run's flow key (v11): null unless its definition is flow-controlled. */
  flow_key?: string | null;
  /** Its place among its key's queued runs (v11): higher first. */
  priority?: number;
  /** Its start order within its key's queue (v11), while it waits for a slot. */
  queue_seq?: number | null;
  /** Why a queued run waits (v11): `concurrency`, `rate` or `debounce`; null otherwise. */
  queued_for?: TaskQueueReason | null;
  /** Settled journal rows when the run was last claimed (the breaker's progress mark). */
  progress: number;
  /** Consecutive attempts that ended without settling a journal row (died or abandoned). */
  stalls: number;
  created_at: number;
  started_at: number | null;
  /** The W3C `traceparent` the run was started under (v4), or null. */
  trace: string | null;
  /** When the current (or last) attempt was claimed (v4; null for a run last claimed before it). */
  attempt_started_at: number | null;
  updated_at: number;
  settled_at: number | null;
}

/** One row of `dk_tasks_steps`, the step journal. */
export interface StepRow {
  name: string;
  /** Order in which the run first journaled the step. */
  seq: number;
  kind: TaskStepKind;
  state: TaskStepState;
  /** The attempt of the step this row records (0 for sleeps and event waits). */
  attempt: number;
  /**
   * Codec text: the result of a completed `do`, the payload of a completed event wait, or the error
   * record of a failed step or of the failed attempt a retry waits after.
   */
  value: string | null;
  /** Sleep deadline, retry time or event-wait timeout. */
  wake_at: number | null;
  /** The event type of an event wait. */
  event_type: string | null;
  /**
   * The step that started right after this row was settled, in the same attempt — written in the
   * same row write that records this step, and so the in-flight evidence of that next step.
   */
  next_step: string | null;
  /** Time of the row's last write. */
  at: number;
}

/** One buffered event of `dk_tasks_events`. */
export interface EventRow {
  seq: number;
  type: string;
  payload: string;
}

/** One row of `dk_tasks_calls`: a call recorded through a step journal (`step.journal(name)`). */
export interface CallRow {
  /** The step journal's name. */
  journal: string;
  /** The call key (`"3"`, `"3.2"`). */
  key: string;
  /** Order of recording within the journal, from 1. */
  seq: number;
  /** The execution the journal belongs to (one per journal). */
  executionId: string;
  module: string;
  method: string;
  argsDigest: string;
  /** A handle-journal outcome kind: `value`, `error`, `handle`, `interrupt` or `unsafe`. */
  outcome: string;
  /** Codec text of the outcome, or null. */
  payload: string | null;
  /** Time of the row's last write (recording, or the resolve of a pending entry). */
  at: number;
}
