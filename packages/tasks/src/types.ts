import type {
  JournalEntry,
  JournalPort,
  JournalRecord,
  JournalRecordResult,
} from "@durablekit/handle-journal";
import type { TaskChildSpec } from "./children/child-steps";
import type {
  TaskChildOutcome,
  TaskChildRun,
  TaskChildrenOptions,
  TaskChildTarget,
} from "./children/types";
import type { TaskErrorInfo, TaskEvent } from "./events";
import type { TaskConcurrency, TaskDebounce, TaskRateLimit, TaskSchedule } from "./flow/options";
import type { TaskRetryOptions } from "./policy";
import type {
  TaskInterruptedStep,
  TaskQueueReason,
  TaskRunState,
  TaskStepKind,
  TaskStepState,
  TaskWaitReason,
} from "./store/rows";

/** What a `step.do` callback receives for one attempt. */
export interface TaskStepAttemptContext {
  /** 1-based attempt of this step. */
  readonly attempt: number;
  /** `<runId>:<step name>`: the same on every attempt and replay; use it as an idempotency key outside. */
  readonly idempotencyKey: string;
  /** Aborted when the attempt times out or the run is cancelled. */
  readonly signal: AbortSignal;
}

/** Options of `step.awaitChildren`. */
export interface TaskAwaitChildrenOptions {
  /** How many of the runs must settle (default: all of them): 1 for the first, N for the first N. */
  count?: number;
  /** Answers with the children settled so far once this many milliseconds passed (default: no limit). */
  timeoutMs?: number;
}

/** Options of `step.waitForEvent`. */
export interface TaskWaitForEventOptions {
  /** The event type to wait for, as given to `sendEvent`. */
  type: string;
  /** How long to wait, in milliseconds; without it the step waits until an event arrives or the run is cancelled. */
  timeoutMs?: number;
}

/**
 * A call journal kept in a task run's own journal (`step.journal(name)`): the `JournalPort` of
 * `@durablekit/handle-journal`, so a program run inside a task (`Executor.execute(…, { journal })`
 * of `@durablekit/rpc-bridge`) records its calls as rows of the run. Its entries load with the run's
 * steps, in the attempt's one journal query; they are deleted with the run.
 *
 * A journal holds one execution: the first `record` binds it, and another execution id is refused
 * with `tasks/conflict` (take one journal name per execution). The port belongs to the attempt that
 * took it; once that attempt has ended (parked, settled, superseded) every method throws
 * `tasks/closed` — take the journal again in the attempt that uses it.
 */
export interface TaskStepJournal extends JournalPort {
  /** The journal's name, as given to `step.journal`. */
  readonly name: string;
  /**
   * Every entry of the execution, in recorded order, from memory (loaded with the run's journal);
   * `[]` for a journal that holds no execution yet.
   *
   * @throws TasksError `tasks/invalid-argument` for a malformed execution id; `tasks/conflict` when
   *   the journal holds another execution; `tasks/closed` when the attempt has ended.
   */
  lookup(executionId: string): readonly JournalEntry[];
  /**
   * Records one call before its outcome is delivered: one row written, fenced on the attempt's
   * claim, durable with the turn's commit. `seq` counts up from 1; the entry's `recordedAt`, when
   * given, is stored as is (else the engine's clock, the `now` option).
   *
   * @throws JournalError `journal/conflict` when the key is already recorded (nothing written);
   *   TasksError `tasks/invalid-argument` for a malformed entry, `tasks/too-large` for a payload
   *   over `maxValueBytes`, `tasks/conflict` when the journal holds another execution,
   *   `tasks/closed` when the attempt has ended (or another attempt holds the run).
   */
  record(entry: JournalRecord): JournalRecordResult;
  /**
   * Replaces a pending entry (outcome `interrupt` or `unsafe`), e.g. with the value a resume
   * supplied, keeping its `seq`; `recordedAt` (default the engine's clock) becomes its time. One row
   * written. False, writing nothing, when the key is not recorded as pending for that execution.
   *
   * @throws TasksError `tasks/invalid-argument`, `tasks/too-large`, `tasks/closed` as `record`.
   */
  resolve: JournalPort["resolve"];
  /**
   * Deletes the execution's entries in one statement and frees the journal for another execution;
   * returns how many there were (0 for an execution it does not hold).
   *
   * @throws TasksError `tasks/invalid-argument`, `tasks/closed` as `record`.
   */
  deleteExecution(executionId: string): number;
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
    options: TaskStepOptions<Awaited<T>>,
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
  /**
   * A version marker: how a definition changes while runs are in flight without a new definition
   * name (as Temporal's `patched()`). Returns `latest` for a run that reaches the marker on new
   * ground, and `0` for a run that passed this point before the marker existed (its journal still
   * holds steps the handler has not reached yet). The answer is journaled at first sight (one row,
   * `__dk:version:<name>`, shown by `steps()` as a step of kind `"version"`), so every later replay
   * of the run takes the same branch, whatever `latest` is by then:
   *
   * ```ts
   * if ((await step.version("tally", 1)) >= 1) await step.do("tally", count);
   * else await step.do("count", count); // runs recorded before the change
   * ```
   *
   * Version names are checked like step names and are their own namespace. Call it outside
   * parallel branches (`Promise.all`), where what "not reached yet" means depends on timing.
   *
   * @throws TasksError `tasks/invalid-argument` for a bad name or a `latest` that is not an integer
   *   ≥ 1; `tasks/duplicate-step` (fails the run) for a name used twice in one attempt.
   */
  version(name: string, latest: number): Promise<number>;
  /**
   * The call journal named `name` of this run (see {@link TaskStepJournal}), for a program run
   * inside the task: pass it as the bridge's `journal`. The same name returns the same journal —
   * within an attempt the same object, across attempts the same rows. Journal names are checked
   * like step names and are their own namespace (a journal and a step may share a name).
   *
   * @throws TasksError `tasks/invalid-argument` for a bad name.
   */
  journal(name: string): TaskStepJournal;
  /**
   * Starts a run of `definition` in another object (`target`: a namespace binding of the `children`
   * option and the object's name or id), exactly once: a step that records its intent (a random key
   * and secret for the exchange) before the start leaves, so a retry after a crash or a lost answer
   * joins the same child run. Resolves to the child run (plain data, journaled); its settlement
   * comes back to this run by itself. `options` are the step's (`retries`, `timeoutMs`): the start
   * is retried as a `do` is.
   *
   * @throws TasksError `tasks/invalid-argument` without the `children` option or for a bad target;
   *   NonRetryableError when the child's object refuses the start (an unknown definition there).
   */
  startChild(
    name: string,
    target: TaskChildTarget,
    definition: string,
    input?: unknown,
    options?: TaskStepOptions,
  ): Promise<TaskChildRun>;
  /**
   * Starts many child runs in one step, each exactly once as {@link TaskStep.startChild} starts
   * one: their intents are one transaction, the starts go as one RPC per object, and the step
   * journals one row. Resolves to the child runs in the order given. At most 1,000 children; a retry
   * sends only the starts still unanswered, and must ask for as many children as the first attempt.
   *
   * @throws TasksError `tasks/invalid-argument` without the `children` option, for an empty or
   *   over-long list or a bad target; NonRetryableError when a child's object refuses its start.
   */
  startChildren(
    name: string,
    children: readonly TaskChildSpec[],
    options?: TaskStepOptions,
  ): Promise<TaskChildRun[]>;
  /**
   * Waits until `count` of `runs` (default: all) have settled, or `timeoutMs` passed, and answers
   * each child's outcome in the order given: `completed` with its result, `failed` or `cancelled`
   * with its coded error, or `running` (not settled when the wait was answered). The answer is
   * journaled: a replay answers the same children as settled. At most 10,000 runs, started by this
   * run.
   *
   * @throws TasksError `tasks/invalid-argument` without the `children` option, for an empty or
   *   over-long list, or a `count` out of range.
   */
  awaitChildren(
    name: string,
    runs: TaskChildRun | readonly TaskChildRun[],
    options?: TaskAwaitChildrenOptions,
  ): Promise<TaskChildOutcome[]>;
  /** Publishes a progress message on the run's snapshot; silent while replaying journaled ground. */
  status(message: string): Promise<void>;
  /** The idempotency key `step.do(name, …)` gets: `<runId>:<name>`. */
  idempotencyKey(name: string): string;
}

/** A handler: `(input, step) => result`. */
export type TaskHandler = (input: never, step: TaskStep) => unknown;

/**
 * The widest definition with options: what every {@link TaskDefinition} is assignable to (its
 * `key` and schedules' inputs are typed by `defineTask`).
 */
export interface TaskDefinitionBase {
  handler: TaskHandler;
  key?: (input: never) => string;
  concurrency?: TaskConcurrency;
  rateLimit?: TaskRateLimit;
  debounce?: TaskDebounce;
  priority?: number;
  schedules?: readonly TaskSchedule<unknown>[];
}

/**
 * The definitions map: versioned names to handlers, or to definitions with options
 * (`{ handler, concurrency, rateLimit, debounce, priority, schedules }`, see {@link TaskDefinition}).
 */
export type TaskDefinitions = Record<string, TaskHandler | TaskDefinitionBase>;

/** The handler of a definitions-map entry. */
type HandlerOf<Entry> = Entry extends { handler: infer Handler } ? Handler : Entry;

/** The input type of a definition (a handler, or a definition with options). */
export type TaskInput<Definition> =
  HandlerOf<Definition> extends (input: infer Input, step: TaskStep) => unknown ? Input : never;

/** The result type of a definition (a handler, or a definition with options). */
export type TaskOutput<Definition> =
  HandlerOf<Definition> extends (...args: never[]) => infer Output ? Awaited<Output> : never;

/** Options of {@link Tasks}. */
export interface TasksOptions<Definitions extends TaskDefinitions> {
  /**
   * The registry: versioned definition names (`"build@v1"`) to handlers, or to definitions with
   * options (`{ handler, key?, concurrency?, rateLimit?, debounce?, priority?, schedules? }`, see
   * `defineTask`). Pass it on every construction; the object rebuilds it on every wake, so in-flight
   * runs always find their handler, and the declared schedules are kept in step with it.
   */
  definitions: Definitions;
  /** Default retry policy of every step (5 attempts, 1000 ms, exponential). */
  retries?: TaskRetryOptions;
  /** Default timeout of one step attempt, in milliseconds (300000: 5 minutes). */
  stepTimeoutMs?: number;
  /**
   * How long a claimed attempt may go without a sign of life before the alarm reclaims its run, in
   * milliseconds (5000). While the isolate lives, `alarm()` extends the claim of its own attempts
   * (one alarm and one row write per `claimTimeoutMs` of a running step: 720 an hour at 5 s). The
   * first request, RPC or alarm that reaches a new instance of the object recovers a dead attempt
   * at once; the deadline bounds how late recovery starts when nothing reaches the object at all.
   */
  claimTimeoutMs?: number;
  /** Largest encoded input, metadata, step result, event payload or run result (1 MiB). */
  maxValueBytes?: number;
  /** Most steps one run may journal (10,000). */
  maxStepsPerRun?: number;
  /**
   * Consecutive attempts of a run that may end without journaling a step — the object died (memory
   * limit, reset loop, deploy) or the attempt was abandoned on a platform failure — before the run
   * fails with `tasks/too-many-attempts` (4: a deploy or crash mid-step, then a crash of each of two
   * recoveries, and the attempt after them still runs; a chat turn's `maxRecoveries` (2) relies on it).
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
  /**
   * Runs in other objects: how this object reaches the objects it starts child runs in
   * (`step.startChild`) and the parents of its own child runs. Without it, `startChild` and
   * `awaitChildren` refuse and `receive()` answers every message refused.
   */
  children?: TaskChildrenOptions;
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
  /**
   * `true` accepts the run held (`paused`): it takes no attempt and costs no wake until
   * `resume(runId)`. Default `false`.
   */
  paused?: boolean;
  /**
   * A deadline for the whole run, in milliseconds from its acceptance, across its attempts, sleeps,
   * retries and waits (and pauses): once it passes, the run fails with `tasks/run-timeout` — at its
   * next wake, or, for an attempt running, there and then (its steps in flight are aborted with a
   * `TimeoutError`). A handler that has returned is never failed afterwards. None by default.
   */
  deadlineMs?: number;
  /**
   * Where the run stands among its flow key's queued runs (higher first; equal priorities keep
   * start order): an integer from -1,000,000 to 1,000,000. Default: its definition's `priority`, or 0.
   */
  priority?: number;
  /**
   * The W3C `traceparent` of the span that starts the run (e.g. the request's), kept with the run so
   * every attempt — after evictions, restarts and resumes days later — can be traced under it
   * (`task:attempt:started` carries it). Version `00` only.
   */
  trace?: string;
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
   * run's id, not the one passed), `"debounce"` (the call was gathered into its key's debounced
   * run, which took its input; `runId` is that run's), `"trigger"` (`trigger()` with a batch whose
   * positions already have their run; `runId` is the run of the source's latest batch), or `null`
   * for a run this call accepted.
   */
  joinedBy: "runId" | "idempotencyKey" | "debounce" | "trigger" | null;
  state: TaskRunState;
  createdAt: number;
}

/**
 * A batch of a source for `trigger()`: the positions after `from`, up to and including `to`, of
 * `source` (a stream: positions are its seqs, the batch `(from, to]` its chunks `from` … `to - 1`).
 */
export interface TaskTriggerBatch {
  /** The source's name: 1–200 characters. */
  source: string;
  /** The position before the batch (an integer ≥ 0). */
  from: number;
  /** The batch's end (an integer > `from`). */
  to: number;
}

/**
 * The input of a run `trigger()` starts: its batch, starting where the source's previous run ended
 * when that is later than the batch's `from` (a batch delivered again after more data came).
 */
export type TaskTriggerInput = TaskTriggerBatch;

/** Options of `trigger()`: those of `run()` that do not name the run (a trigger names it). */
export type TaskTriggerOptions = Pick<
  TaskRunOptions,
  "metadata" | "retain" | "trace" | "deadlineMs" | "priority"
>;

/** What `trigger()` returns: the run's receipt and the batch it took (`from`, `to`). */
export interface TaskTriggerReceipt extends TaskReceipt {
  /** The start of the batch the run took; for a batch that had its run already, the source's position. */
  from: number;
  to: number;
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
  /** The W3C `traceparent` the run was started under (`run(…, { trace })`). */
  trace?: string;
  /** When the run fails with `tasks/run-timeout` (`run(…, { deadlineMs })`), if it has a deadline. */
  deadlineAt?: number;
  /**
   * Consecutive attempts that ended (the object died, or they were abandoned) without journaling a
   * step, when there are any: at `maxAttemptsWithoutProgress` the run fails with
   * `tasks/too-many-attempts`.
   */
  attemptsWithoutProgress?: number;
}

/** A read-only view of one run, discriminated by `state`. */
export type TaskRunSnapshot<Output = unknown> = SnapshotBase &
  (
    | {
        /**
         * Accepted and held by its definition's flow control until a slot frees (`concurrency`),
         * its rate window has room (`rate`), or its key has been quiet long enough (`debounce`).
         */
        state: "queued";
        reason: TaskQueueReason;
        /** Its flow key (`""` for a definition without a `key`). */
        key: string;
        priority: number;
        /** When a debounced run starts (unless called again first); null while it waits for a slot. */
        wakeAt: number | null;
      }
    | { state: "pending" }
    | {
        state: "running";
        startedAt: number;
        statusMessage?: string;
        /** True when a pause was asked and the attempt holds the run at its next step boundary. */
        pauseRequested?: true;
      }
    | {
        state: "waiting";
        reason: TaskWaitReason;
        /** When the run wakes; null for an event wait without a timeout. */
        wakeAt: number | null;
        /** The event type an event wait waits for. */
        eventType?: string;
        statusMessage?: string;
      }
    | {
        /** Held by `pause` (or accepted with `paused: true`) until `resume`; no attempt, no wake. */
        state: "paused";
        statusMessage?: string;
      }
    | { state: "completed"; result: Output; settledAt: number }
    | { state: "failed"; error: TaskErrorInfo; settledAt: number }
    | { state: "cancelled"; reason?: string; settledAt: number }
  );

/** A read-only view of one journaled step. */
export interface TaskStepSnapshot {
  /** The step's name (a version marker's name, as given to `step.version`). */
  name: string;
  /**
   * The step's kind; `"version"` for a version marker, whose `result` is the version;
   * `"compensation"` for the compensation of the step `name` (its `compensate` option), run when
   * the run failed.
   */
  kind: TaskStepKind | "version" | "compensation";
  /** A sleep past its deadline reads as `completed`. */
  state: TaskStepState;
  attempt: number;
  result?: unknown;
  error?: TaskErrorInfo;
  /** Sleep deadline, retry time or event-wait timeout. */
  wakeAt?: number;
  eventType?: string;
  /**
   * When the step's journal row was last written (the engine's clock, `now`): its settlement for a
   * settled step; its start, retry or park while it runs or waits. A step the handler awaited
   * after another started no earlier than that one's `updatedAt`.
   */
  updatedAt: number;
}

/**
 * One attempt of a run (`attempts()`): when it started and ended, and how. An attempt is a claim of
 * the run by one isolate: the first run, each retry of a failed step, each wake after a sleep or an
 * event, and each recovery after the object died.
 */
export interface TaskAttemptSnapshot {
  /** 1-based, as `TaskRunSnapshot.attempt` counts them. */
  attempt: number;
  startedAt: number;
  /** When it ended; `null` while it runs, or when it was cut short (`interrupted`). */
  endedAt: number | null;
  /**
   * `running`; `completed`, `failed` or `cancelled` (it settled the run); `sleep`, `event` or
   * `retry` (it parked the run at `step`: a sleep, an event wait, a failed step's back-off);
   * `paused` (it held the run for a pause, before `step` ran or where it parked); `completed`,
   * `failed` and `cancelled` also name an attempt that settled the run before a `restart`; or
   * `interrupted`: the object died or was reset under it, or it gave the run up (a platform
   * failure), and a later attempt took the run over.
   */
  outcome:
    | "running"
    | "completed"
    | "failed"
    | "cancelled"
    | "sleep"
    | "event"
    | "retry"
    | "paused"
    | "interrupted";
  /** The step it parked at (`sleep`, `event`, `retry`) or was held at (`paused`). */
  step?: string;
  /** For `retry`: the error the step failed with. */
  error?: TaskErrorInfo;
}

/** One step journal of a run (`journals()`): its name, its execution and its entries in order. */
export interface TaskStepJournalSnapshot {
  /** The journal's name, as given to `step.journal(name)`. */
  name: string;
  /** The execution it holds (a journal holds one). */
  executionId: string;
  /** Its entries in recorded order, as the journal's `lookup` returns them. */
  entries: JournalEntry[];
}

/**
 * Options of `history()`.
 */
export interface TaskHistoryOptions {
  /**
   * Bounds the values read: each value (input, metadata, result, a step's result) whose stored text
   * is larger than this many bytes is neither read nor decoded, and comes back as a
   * `TaskTruncatedValue` (its size and the start of its text) in its place. Values at most this
   * size are decoded as without the option. Default: none (every value whole).
   */
  maxValueBytes?: number;
  /**
   * With `maxValueBytes`, bounds the step results read in all: once the results returned whole
   * reach this many bytes (in step order), every later one comes back as a `TaskTruncatedValue`
   * too, so a run of many mid-sized results costs a bounded read. Default: none.
   */
  maxTotalBytes?: number;
}

/**
 * What `history()` returns: a run's snapshot, its input and its journal, read together. Read with
 * `maxValueBytes`, any of its values may be a `TaskTruncatedValue`.
 */
export interface TaskRunHistory {
  run: TaskRunSnapshot;
  /** The run's input, decoded as the handler receives it. */
  input: unknown;
  /** The run's journal in step order, as `steps()` returns it. */
  steps: TaskStepSnapshot[];
  /** The run's attempts in order, as `attempts()` returns them. */
  attempts: TaskAttemptSnapshot[];
}

/** Filters and paging of `list()`. */
export interface TaskListOptions {
  definition?: string;
  /** Only runs created after this time (a `Date` or epoch milliseconds, exclusive). */
  createdAfter?: Date | number;
  /** Only runs created before this time (a `Date` or epoch milliseconds, exclusive). */
  createdBefore?: Date | number;
  /** Only runs in this state (or these states), as in the snapshot's `state`. */
  state?: TaskRunState | TaskRunState[];
  /** Page size, 1–1000 (100). */
  limit?: number;
  /** The `next` token of the previous page; omit it for the first page. */
  cursor?: string;
  /**
   * `false` reads each run without its values: the snapshots carry no `result` and no `metadata`,
   * so a page of runs with large results costs what their facts cost (a list never reads inputs).
   * Default true.
   */
  values?: boolean;
}

/** Runs by state (`countByState()`), each counted up to a bound. */
export interface TaskRunCounts {
  /** How many runs are in each state; a capped state's count is the bound. */
  byState: Record<TaskRunState, number>;
  /** The states that hold more runs than the bound: their counts are lower bounds. */
  capped: TaskRunState[];
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

/** Options of `restart(runId, options)`. */
export interface TaskRestartOptions {
  /**
   * The journaled step to run again: the steps journaled before it are kept (they are not run
   * again), and it and every step journaled after it are dropped and run again.
   */
  from: string;
  /**
   * A new deadline for the run, in milliseconds from the restart (see `TaskRunOptions.deadlineMs`).
   * Without it the restarted run has none: a restart is an operator's decision to go on.
   */
  deadlineMs?: number;
}

/** What `restart` did. */
export interface TaskRestartResult {
  /** The restart's number for this run: 1 for its first. */
  restart: number;
  /** Journal rows dropped (the `from` step and every later one), kept in `restarts(runId)`. */
  dropped: number;
}

/** One restart of a run, as `restarts(runId)` shows it. */
export interface TaskRestartSnapshot {
  /** 1 for the run's first restart. */
  restart: number;
  /** The step it restarted from. */
  from: string;
  at: number;
  /** Attempts the run had claimed before it (the next attempt is one more). */
  attempt: number;
  /** The run's state when it was restarted. */
  state: TaskRunState;
  /** The journal rows it dropped, as `steps()` showed them then. */
  steps: TaskStepSnapshot[];
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
  pause(runId: string): Promise<boolean>;
  resume(runId: string): Promise<boolean>;
  restart(runId: string, options: TaskRestartOptions): Promise<TaskRestartResult>;
}

/** Per-call options of `step.do`. */
export interface TaskStepOptions<Result = unknown> {
  retries?: TaskRetryOptions;
  /** Time one attempt of the callback may take, in milliseconds; it then loses even if it ignores its signal. */
  timeoutMs?: number;
  /**
   * What undoes the step once it completed: when the run then fails for good, the compensations
   * of its completed steps run in reverse start order, each a journaled step of its own (retried
   * with this step's `retries` and `timeoutMs`), and the run fails with its error. Called with the
   * step's result (as the journal gives it back) and the compensation's attempt context.
   */
  compensate?: (result: Result, context: TaskStepAttemptContext) => unknown;
}
