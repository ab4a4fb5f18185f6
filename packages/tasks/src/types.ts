import type { Duration } from "./duration";
import type { TaskErrorInfo, TaskEvent } from "./events";
import type { InterruptedStep } from "./journal";
import type { RetryConfig, StepConfig } from "./policy";
import type { RunState, StepKind, StepState, WaitReason } from "./rows";

/** What a `step.do` callback receives for one attempt. */
export interface StepAttemptContext {
  /** 1-based attempt of this step. */
  readonly attempt: number;
  /** `<runId>:<step name>`: the same on every attempt and replay; use it as an idempotency key outside. */
  readonly idempotencyKey: string;
  /** Aborted when the attempt times out or the run is cancelled. */
  readonly signal: AbortSignal;
}

/** Options of `step.waitForEvent`. */
export interface WaitForEventOptions {
  /** The event type to wait for, as given to `sendEvent`. */
  type: string;
  /** How long to wait; without it the step waits until an event arrives or the run is cancelled. */
  timeout?: Duration;
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
  readonly interrupted: InterruptedStep | null;
  /**
   * Runs `fn` once and journals its result; replays return the journaled result without running it.
   *
   * @throws the step's last error (rebuilt from its error record) when it fails terminally; the
   *   handler may catch it. `tasks/duplicate-step` / `tasks/replay-diverged` fail the run.
   */
  do<T>(name: string, fn: (context: StepAttemptContext) => T | Promise<T>): Promise<Awaited<T>>;
  do<T>(
    name: string,
    config: StepConfig,
    fn: (context: StepAttemptContext) => T | Promise<T>,
  ): Promise<Awaited<T>>;
  /** Sleeps durably for `duration`; the first recorded deadline stays authoritative across replays. */
  sleep(name: string, duration: Duration): Promise<void>;
  /** Sleeps durably until a wall-clock time. */
  sleepUntil(name: string, when: number | Date): Promise<void>;
  /**
   * Waits for an event of `options.type` sent with `sendEvent`; an event sent before the wait is
   * buffered and consumed here. Replays return the same payload.
   *
   * @throws EventTimeoutError (`tasks/event-timeout`) when the timeout passes first.
   */
  waitForEvent<T = unknown>(name: string, options: WaitForEventOptions): Promise<T>;
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
  /** Default retry policy of every step (5 attempts, 1 s, exponential). */
  retries?: RetryConfig;
  /** Default timeout of one step attempt (5 minutes). */
  stepTimeout?: Duration;
  /**
   * How long a claimed attempt may go without a sign of life before the alarm reclaims its run
   * (60 seconds). While the isolate lives, `alarm()` extends the claim of its own attempts; the
   * deadline only matters when the isolate died, and then bounds how late recovery starts.
   */
  claimTimeout?: Duration;
  /** Largest encoded input, metadata, step result, event payload or run result (1 MiB). */
  maxValueBytes?: number;
  /** Most steps one run may journal (10,000). */
  maxStepsPerRun?: number;
  /** Called with the error of every run that settles as failed. Errors it throws are ignored. */
  onError?: (error: Error, run: { runId: string; definition: string }) => void | Promise<void>;
  /** Called synchronously with every lifecycle event. Errors it throws are ignored. */
  onEvent?: (event: TaskEvent) => void;
  /**
   * Asks the host for a wake no later than `at` (ms since epoch). The engine never touches the
   * alarm itself; a host typically sets the alarm when it is unset or later than `at`. Without it,
   * the host re-arms from `nextWakeAt()` after calling into the engine.
   */
  armAlarm?: (at: number) => void | Promise<void>;
}

/** Options of `run()`. */
export interface RunOptions {
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
  state: RunState;
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
        reason: WaitReason;
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
  kind: StepKind;
  /** A sleep past its deadline reads as `completed`. */
  state: StepState;
  attempt: number;
  result?: unknown;
  error?: TaskErrorInfo;
  /** Sleep deadline, retry time or event-wait timeout. */
  wakeAt?: number;
  eventType?: string;
}

/** Filters of `list()`. */
export interface ListOptions {
  definition?: string;
  status?: RunState | RunState[];
  /** Page size, 1–1000 (100). */
  limit?: number;
  /** The `runId` of the last run of the previous page. */
  after?: string;
}

/** Filters of `delete()`. */
export interface DeleteOptions {
  /** Which settled states to delete (all three). */
  status?: Array<"completed" | "failed" | "cancelled">;
  /** Only runs settled before this time. */
  settledBefore?: Date | number;
  /** At most this many runs, 1–1000 (100). */
  limit?: number;
}

/** How `sendEvent` handled an event. */
export type SendEventResult = "delivered" | "buffered";

/** A typed lens on one definition: it sees only that definition's runs. */
export interface TaskHandle<Input, Output> {
  readonly name: string;
  run(input: Input, options?: RunOptions): Promise<TaskReceipt>;
  get(runId: string): TaskRunSnapshot<Output> | null;
  getByIdempotencyKey(key: string): TaskRunSnapshot<Output> | null;
  cancel(runId: string, reason?: string): Promise<boolean>;
}
