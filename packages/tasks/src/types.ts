import type { TaskErrorInfo, TaskEvent } from "./events";
import type { TaskRetryOptions, TaskStepOptions } from "./policy";
import type {
  TaskInterruptedStep,
  TaskRunState,
  TaskStepKind,
  TaskStepState,
  TaskWaitReason,
} from "./rows";

/** What a `step.do` callback receives for one attempt. */
export interface TaskStepAttemptContext {
  /** 1-based attempt of this step. */
  readonly attempt: number;
  /** `<runId>:<step name>`: the same on every attempt and replay; use it as an idempotency key outside. */
  readonly idempotencyKey: string;
  /** Aborted when the attempt times out or the run is cancelled. */
  readonly signal: AbortSignal;
}

/** Options of `step.waitForEvent`. */
export interface TaskWaitForEventOptions {
  /** The event type to wait for, as given to `sendEvent`. */
  type: string;
  /** How long to wait, in milliseconds; without it the step waits until an event arrives or the run is cancelled. */
  timeoutMs?: number;
}

/**
 * The step API a handler receives. Step names are the run's journal keys: unique per run, stable
 * across replays. Every attempt runs the handler from the top; journaled steps answer from the
 * journal without running again.
 */
export interface TaskStep {
  /** The run this attempt executes. */
  readonly runId: string;
  /** The run's attempt number (1 for the first). */
  readonly attempt: number;
  /**
   * The step an unclean interruption (isolate death, platform reset) left mid-execution, or null on
   * a clean attempt. Set from the journal before the handler starts, so a handler can check it
   * before re-entering work that is not safe to repeat.
   */
  readonly interrupted: TaskInterruptedStep | null;
  /**
   * Runs `fn` once and journals its result; replays return the journaled result without running it.
   *
   * @throws the step's last error (rebuilt from its error record) when it fails terminally; the
   *   handler may catch it. `tasks/duplicate-step` / `tasks/diverged` / `tasks/step-limit` fail the
   *   run; `tasks/invalid-argument` for a bad name, options or a missing callback.
   */
  do<T>(name: string, fn: (context: TaskStepAttemptContext) => T | Promise<T>): Promise<Awaited<T>>;
  do<T>(
    name: string,
    options: TaskStepOptions,
    fn: (context: TaskStepAttemptContext) => T | Promise<T>,
  ): Promise<Awaited<T>>;
  /**
   * Sleeps durably for `ms` milliseconds; the first recorded deadline stays authoritative across
   * replays.
   *
   * @throws TasksError `tasks/invalid-argument` for a bad name or a negative or non-finite `ms`.
   */
  sleep(name: string, ms: number): Promise<void>;
  /**
   * Sleeps durably until a wall-clock time (epoch ms or a Date).
   *
   * @throws TasksError `tasks/invalid-argument` for a bad name or time.
   */
  sleepUntil(name: string, when: number | Date): Promise<void>;
  /**
   * Waits for an event of `options.type` sent with `sendEvent`; an event sent before the wait is
   * buffered and consumed here. Replays return the same payload.
   *
   * @throws EventTimeoutError (`tasks/event-timeout`) when the timeout passes first;
   *   TasksError `tasks/invalid-argument` for a bad name, type or `timeoutMs`.
   */
  waitForEvent<T = unknown>(name: string, options: TaskWaitForEventOptions): Promise<T>;
  /** Publishes a progress message on the run's snapshot; silent while replaying journaled ground. */
  status(message: string): Promise<void>;
  /** The idempotency key `step.do(name, …)` gets: `<runId>:<name>`. */
  idempotencyKey(name: string): string;
}

/** The definitions map: versioned names to handlers. */
export type TaskDefinitions = Record<string, (input: never, step: TaskStep) => unknown>;

/** The input type of a handler. */
export type TaskInput<Handler> = Handler extends (input: infer Input, step: TaskStep) => unknown
  ? Input
  : never;

/** The result type of a handler. */
export type TaskOutput<Handler> = Handler extends (...args: never[]) => infer Output
  ? Awaited<Output>
  : never;

/** Options of {@link Tasks}. */
export interface TasksOptions<Definitions extends TaskDefinitions> {
  /**
   * The registry: versioned definition names (`"build@v1"`) to handlers. Pass it on every
   * construction; the object rebuilds it on every wake, so in-flight runs always find their handler.
   */
  definitions: Definitions;
  /** Default retry policy of every step (5 attempts, 1000 ms, exponential). */
  retries?: TaskRetryOptions;
  /** Default timeout of one step attempt, in milliseconds (300000: 5 minutes). */
  stepTimeoutMs?: number;
  /**
   * How long a claimed attempt may go without a sign of life before the alarm reclaims its run, in
   * milliseconds (60000). While the isolate lives, `alarm()` extends the claim of its own attempts;
   * the deadline only matters when the isolate died, and then bounds how late recovery starts.
   */
  claimTimeoutMs?: number;
  /** Largest encoded input, metadata, step result, event payload or run result (1 MiB). */
  maxValueBytes?: number;
  /** Most steps one run may journal (10,000). */
  maxStepsPerRun?: number;
  /**
   * Consecutive attempts of a run that may end without journaling a step — the object died (memory
   * limit, reset loop, deploy) or the attempt was abandoned on a platform failure — before the run
   * fails with `tasks/too-many-attempts` (3, as `agents`' memory-limit breaker).
   */
  maxAttemptsWithoutProgress?: number;
  /** Called with the error of every run that settles as failed. Errors it throws are ignored. */
  onError?: (error: Error, run: { runId: string; definition: string }) => void | Promise<void>;
  /**
   * Called synchronously with every lifecycle event. A listener that throws never breaks the run:
   * its error is reported with `console.warn` and the event is dropped.
   */
  onEvent?: (event: TaskEvent) => void;
  /** The clock, epoch milliseconds (default `Date.now`): run, step, sleep and claim times are read from it. */
  now?: () => number;
}

/** Options of `run()`. */
export interface TaskRunOptions {
  /** Caller-chosen run id (≤ 256 chars); the same id joins the existing run. Default: generated. */
  runId?: string;
  /** Deduplicates acceptance: the same key joins the run it named first. */
  idempotencyKey?: string;
  /** Any codec value kept with the run. */
  metadata?: unknown;
  /** `false` deletes a completed run's records as it completes. Default `true`. */
  retain?: boolean;
}

/** What `run()` returns, without waiting for the run. */
export interface TaskReceipt {
  runId: string;
  definition: string;
  /** False when an existing run matched the run id or idempotency key. */
  accepted: boolean;
  /**
   * How an existing run was joined: `"runId"` (the run id named it), `"idempotencyKey"` (the key
   * did — with a fresh run id too, as a client retrying under a new id: `runId` is then the owning
   * run's id, not the one passed), or `null` for a run this call accepted.
   */
  joinedBy: "runId" | "idempotencyKey" | null;
  state: TaskRunState;
  createdAt: number;
}

interface SnapshotBase {
  runId: string;
  definition: string;
  /** Attempts claimed so far. */
  attempt: number;
  createdAt: number;
  updatedAt: number;
  idempotencyKey?: string;
  metadata?: unknown;
}

/** A read-only view of one run, discriminated by `state`. */
export type TaskRunSnapshot<Output = unknown> = SnapshotBase &
  (
    | { state: "pending" }
    | { state: "running"; startedAt: number; statusMessage?: string }
    | {
        state: "waiting";
        reason: TaskWaitReason;
        /** When the run wakes; null for an event wait without a timeout. */
        wakeAt: number | null;
        /** The event type an event wait waits for. */
        eventType?: string;
        statusMessage?: string;
      }
    | { state: "completed"; result: Output; settledAt: number }
    | { state: "failed"; error: TaskErrorInfo; settledAt: number }
    | { state: "cancelled"; reason?: string; settledAt: number }
  );

/** A read-only view of one journaled step. */
export interface TaskStepSnapshot {
  name: string;
  kind: TaskStepKind;
  /** A sleep past its deadline reads as `completed`. */
  state: TaskStepState;
  attempt: number;
  result?: unknown;
  error?: TaskErrorInfo;
  /** Sleep deadline, retry time or event-wait timeout. */
  wakeAt?: number;
  eventType?: string;
}

/** Filters and paging of `list()`. */
export interface TaskListOptions {
  definition?: string;
  /** Only runs in this state (or these states), as in the snapshot's `state`. */
  state?: TaskRunState | TaskRunState[];
  /** Page size, 1–1000 (100). */
  limit?: number;
  /** The `next` token of the previous page; omit it for the first page. */
  cursor?: string;
}

/** One page of `list()`: the runs, newest first, and the token of the next page (null on the last). */
export interface TaskListPage {
  items: TaskRunSnapshot[];
  /** Pass it back as `{ cursor: next }` for the next page; `null` on the last page. Opaque. */
  next: string | null;
}

/** Filters of `delete()`. */
export interface TaskDeleteOptions {
  /** Which settled states to delete (all three), as in the snapshot's `state`. */
  state?: Array<"completed" | "failed" | "cancelled">;
  /** Only runs settled before this time. */
  settledBefore?: Date | number;
  /** At most this many runs, 1–1000 (100). */
  limit?: number;
}

/** How `sendEvent` handled an event. */
export type TaskSendEventResult = "delivered" | "buffered";

/** A typed lens on one definition: it sees only that definition's runs. */
export interface TaskHandle<Input, Output> {
  readonly name: string;
  run(input: Input, options?: TaskRunOptions): Promise<TaskReceipt>;
  get(runId: string): TaskRunSnapshot<Output> | null;
  getByIdempotencyKey(key: string): TaskRunSnapshot<Output> | null;
  cancel(runId: string, reason?: string): Promise<boolean>;
}
