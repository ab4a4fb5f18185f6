import type { ChatTurnInfo } from "@durablekit/chat-adapter";
import type { DurableStreamsSubscriptionView } from "@durablekit/sse";
import type { TaskAttemptSnapshot, TaskRunState, TaskScheduleSnapshot } from "@durablekit/tasks";

/**
 * The JSON the inspector answers, version {@link INSPECT_SHAPE_VERSION}. Every view carries
 * `version`; a field is only ever added within a version, and a change that removes or retypes one
 * is a new version. The shapes are the inspector's own, mapped from each part's snapshot, so a
 * part's internals can change without changing what a dashboard or a script reads.
 */
export const INSPECT_SHAPE_VERSION = 1;

/**
 * A value too large for the view it is in, shown in its place: its size in UTF-8 bytes of JSON,
 * the start of that JSON, and the API path (below `<basePath>/api`) that answers the whole value
 * (`inspector.value(path)`). A view holds values up to `maxValueBytes` each and `maxViewBytes` in
 * all; every other value is one of these.
 */
export interface InspectTruncated {
  $truncated: {
    /**
     * The whole value's JSON, in UTF-8 bytes; for a task run's value, the bytes it is stored in
     * (its JSON in the codec's 9-byte envelope, with any type annotations), which SQL counts
     * without reading the value.
     */
    bytes: number;
    /** The first characters of that JSON. */
    preview: string;
    /** The API path of the whole value, e.g. `/runs/r1/steps/3/result`. */
    path: string;
  };
}

/** One whole value, by the path a {@link InspectTruncated} record named (`GET …/api<path>`). */
export interface InspectValueView {
  version: typeof INSPECT_SHAPE_VERSION;
  path: string;
  /** The value's JSON, in UTF-8 bytes. */
  bytes: number;
  value: unknown;
}

/** The kinds of part an inspector reads, in the order it shows them. */
export type InspectPartKind = "tasks" | "programs" | "streams" | "chat" | "subscriptions";

/** The states of a task run: `@durablekit/tasks`'s own union (`paused`: held until `resume`). */
export type InspectRunState = TaskRunState;

/** A coded error as a part stored it: `name`, `message`, and `code` when it had one. */
export interface InspectErrorInfo {
  name: string;
  message: string;
  code?: string;
}

/** A task run of `@durablekit/tasks`, as the inspector shows it. */
export interface InspectRun {
  runId: string;
  definition: string;
  state: InspectRunState;
  /** Attempts claimed so far (a restart, a retry and a wake each claim one). */
  attempts: number;
  createdAt: number;
  /** Last change of the run's row. */
  updatedAt: number;
  /** When the live attempt started, while `running`; else `null`. */
  startedAt: number | null;
  settledAt: number | null;
  /** Why a `waiting` run waits: `sleep`, `retry` (a step's back-off) or `event`; else `null`. */
  waitingFor: "sleep" | "retry" | "event" | null;
  /**
   * When a `waiting` run wakes (`null` for an event wait without a timeout, or not waiting), or a
   * `queued` run gathering a debounce starts.
   */
  wakeAt: number | null;
  /**
   * Why a `queued` run waits (its definition's flow control): for a slot (`concurrency`), for room
   * in its rate window (`rate`), or for its key to be quiet (`debounce`); else `null`.
   */
  queuedFor: "concurrency" | "rate" | "debounce" | null;
  /** A `queued` run's flow key (`""`: one key for its definition); else `null`. */
  flowKey: string | null;
  /** A `queued` run's priority (higher first); else `null`. */
  priority: number | null;
  /** The event type a run waiting for an event waits for. */
  eventType: string | null;
  /** The last `step.status()` message of a running or waiting run. */
  statusMessage: string | null;
  idempotencyKey: string | null;
  /** Why a `failed` run failed; a `cancelled` run's reason is in `message`. */
  error: InspectErrorInfo | null;
}

/**
 * One step of a run view, on the run's time axis: `from` is the previous step's `to` (the run's
 * creation for the first), `to` the time its journal row was last written — its settlement, or its
 * start, retry or park while it runs or waits. A step the handler ran concurrently with others is
 * drawn from the step before it in the journal.
 */
export interface InspectStep {
  /** 0-based, in journal order. */
  index: number;
  name: string;
  /**
   * `version` for a version marker (`step.version`), whose `result` is the version;
   * `compensation` for the compensation of the step `name` (its `compensate`), run when the run
   * failed or was cancelled.
   */
  kind: "do" | "sleep" | "event" | "version" | "compensation";
  state: "running" | "waiting" | "completed" | "failed";
  /** Attempts of a `do` step: 3 for one that failed twice, then succeeded; 0 for a wait or a marker. */
  attempts: number;
  from: number;
  to: number;
  /**
   * How long attempts of the run ran within `from`–`to`: a step whose retries backed off spans the
   * back-offs (`to - from`) but ran only this long.
   */
  ranMs: number;
  /** A sleep's deadline, a step's next retry, or an event wait's timeout. */
  wakeAt: number | null;
  eventType: string | null;
  /**
   * The step's result (a completed `do`, an event's payload, a marker's version), or an
   * {@link InspectTruncated} record when it is too large for the view.
   */
  result?: unknown;
  /** The step's last error: why it failed, or why it waits for a retry. */
  error: InspectErrorInfo | null;
}

/**
 * One attempt of a run: a claim of the run by one isolate (the first run, each retry of a failed
 * step, each wake, each recovery after the object died), on the run's time axis. The gaps between
 * attempts are the back-offs, sleeps and waits.
 */
export interface InspectAttempt {
  /** 1-based. */
  attempt: number;
  startedAt: number;
  /** `null` while it runs, or for an attempt cut short (`interrupted`). */
  endedAt: number | null;
  /**
   * `running`; `completed`, `failed`, `cancelled` (it settled the run); `sleep`, `event`, `retry`
   * (it parked the run at `step`); `interrupted` (the object died or was reset under it).
   */
  outcome: TaskAttemptSnapshot["outcome"];
  /** The step it parked at. */
  step: string | null;
  /** For `retry`: the error the step failed with. */
  error: InspectErrorInfo | null;
}

/**
 * One call a program recorded in its journal: where it sits, what it called, how it ended. Decoded
 * through the object's `Executor` (rpc-bridge) when it is a part; without one, `decoded` is false
 * and only the journal's own columns are shown (no `error`, `handles`, `charged`).
 */
export interface InspectCall {
  /** `"1"`, `"2"`, … for module calls; `"1.1"` for the first call on what call 1 returned. */
  key: string;
  /** Its place in the journal, from 1. */
  seq: number;
  /** The module specifier, or for a call on a returned object its kind (`"codemode:jobs#Job"`). */
  module: string;
  method: string;
  /** `value`, `handle`, `error`, `interrupt` (released the run) or `unsafe` (an unsettled marker). */
  outcome: "value" | "error" | "handle" | "interrupt" | "unsafe";
  /** When its outcome was recorded. */
  at: number;
  /** Its journaled payload, in UTF-8 bytes. */
  bytes: number;
  /** Bytes it was charged toward the run's limits. */
  charged: number | null;
  /** The kinds of the objects its answer returned. */
  handles: string[];
  /** For an `error` outcome: the error's name, message and code. */
  error: InspectErrorInfo | null;
  /** The bridge refused it after keying it (access, limits, arguments). */
  refused: boolean;
  /** Whether the bridge decoded its payload. */
  decoded: boolean;
  /**
   * In a run view: the attempt of the run that ran the call live (the one running when its outcome
   * was recorded; for an interrupt resolved on resume, the attempt that resumed it). Every later
   * attempt that reached the call answered it from the journal. `null` in an execution view, or
   * when no attempt of the run covers its time.
   */
  attempt: number | null;
}

/** A step journal of a run: the calls of the program it ran (`step.journal(name)`). */
export interface InspectJournal {
  /** The journal's name (`"program"`). */
  name: string;
  /** The execution it holds. */
  executionId: string;
  calls: InspectCall[];
}

/** A program execution of rpc-bridge (`GET …/api/executions/:executionId`). */
export interface InspectExecution {
  executionId: string;
  state: "running" | "completed" | "failed" | "interrupted" | "cancelled";
  /** `"replay"` for a replay run (its calls journaled), `"fail"` or `"restart"` otherwise. */
  onInterrupt: string;
  /** Attempts of the run (a `"restart"` run counts up). */
  attempts: number;
  /** Bridge calls its last attempt made. */
  callCount: number;
  createdAt: number;
  startedAt: number;
  finishedAt: number | null;
  /** Where an interrupted run waits: the call's key and its payload. */
  interrupt: { key: string; payload: unknown } | null;
  error: InspectErrorInfo | null;
  /** The label of an `unsafeToRepeat` call that ran, which forbids restarting it. */
  unsafeCall: string | null;
  /**
   * A replay run's fingerprint: what a replay must match (digests of the program and source
   * modules, compatibility date and flags, wire and journal formats); `null` for other runs.
   */
  fingerprint: Record<string, unknown> | null;
}

/** An execution and its journal's calls (`GET …/api/executions/:executionId`). */
export interface InspectExecutionView {
  version: typeof INSPECT_SHAPE_VERSION;
  execution: InspectExecution;
  /** A completed run's result (or an {@link InspectTruncated} record). */
  result?: unknown;
  /**
   * The calls of its own journal (the executor's), in order; `[]` for a run that journals nothing or
   * whose journal is a task's (see that run's view).
   */
  calls: InspectCall[];
}

/** A run's facts, its input, its attempts and its steps on a time axis (`GET …/api/runs/:runId`). */
export interface InspectRunView {
  version: typeof INSPECT_SHAPE_VERSION;
  run: InspectRun;
  /** The run's input, as its handler receives it (or an {@link InspectTruncated} record). */
  input: unknown;
  /** A completed run's result (or an {@link InspectTruncated} record). */
  result?: unknown;
  /** Every attempt in order, with how it ended. */
  attempts: InspectAttempt[];
  steps: InspectStep[];
  /** The step journals of programs it ran (`step.journal(name)`), decoded. */
  journals: InspectJournal[];
  /** The child runs it started in other objects (`step.startChild`, `startChildren`), in start order. */
  children: InspectChild[];
  /** Its restarts (`Tasks.restart`) in order, each with the steps it dropped: the run's earlier history. */
  restarts: InspectRestart[];
}

/** A restart of a run, with the journal rows it dropped as they were. */
export interface InspectRestart {
  /** 1 for the run's first restart. */
  restart: number;
  /** The step it restarted from. */
  from: string;
  at: number;
  /** Attempts the run had claimed before it. */
  attempt: number;
  /** The run's state when it was restarted. */
  state: string;
  /** The dropped steps, in journal order; a result too large for the view is a truncated record. */
  steps: Array<{
    name: string;
    kind: InspectStep["kind"];
    state: InspectStep["state"];
    attempts: number;
    result?: unknown;
    error: InspectErrorInfo | null;
  }>;
}

/** A child run a run started, as the run's object knows it. */
export interface InspectChild {
  /** The child run's id; null while its start is unanswered. */
  runId: string | null;
  /** The step that started it, and its position among that step's children. */
  step: string;
  index: number;
  definition: string;
  state: "starting" | "running" | "completed" | "failed" | "cancelled";
  settledAt: number | null;
  /** The object it runs in. */
  target: { binding: string; id: string };
  /** True when it runs in this inspected object (its run view is then this inspector's). */
  here: boolean;
}

/** One page of a list view: the items, and the token of the next page (`null` on the last). */
export interface InspectPage<Item> {
  version: typeof INSPECT_SHAPE_VERSION;
  items: Item[];
  /** Pass it back as `cursor` for the next page; `null` on the last page. Opaque. */
  next: string | null;
}

/** A stream of `@durablekit/streams`, as the inspector shows it. */
export interface InspectStream {
  streamId: string;
  state: "streaming" | "completed" | "errored";
  /** How many chunks the stream holds: the next seq to be written. */
  cursor: number;
  encoding: "json" | "text" | "binary";
  contentType: string;
  tag: string | null;
  /** The reason given to `error()`, for an errored stream. */
  error: string | null;
  createdAt: number;
  /** Last activity: creation, latest append, settlement or touch. */
  updatedAt: number;
  closedAt: number | null;
  /** When the stream expires, if it has a TTL or an absolute expiry. */
  expiresAt: number | null;
}

/** One chunk of a stream view, decoded by the stream's encoding. */
export interface InspectChunk {
  seq: number;
  /**
   * The JSON value (`json`), the string (`text`), or the base64 of the bytes (`binary`); an
   * {@link InspectTruncated} record for a chunk too large for the view.
   */
  value: unknown;
}

/** A stream's status and one page of its chunks (`GET …/api/streams/:id`). */
export interface InspectStreamView {
  version: typeof INSPECT_SHAPE_VERSION;
  stream: InspectStream;
  chunks: InspectChunk[];
  /**
   * The seq after the page's last chunk: pass it as `from` for the next page. A page ends at
   * `limit` chunks or when its chunks fill `maxViewBytes`, whichever comes first.
   */
  next: number;
  /** True when the page reaches the stream's cursor. */
  upToDate: boolean;
}

/**
 * A chat turn of `@durablekit/chat-adapter`, as the inspector shows it: the turn as `ChatTurns`
 * lists it (`live` is false for a turn ended or left by a restart).
 */
export type InspectChatTurn = ChatTurnInfo;

/** A chat turn and the UI message chunks it stored (`GET …/api/turns/:turnId`). */
export interface InspectChatTurnView {
  version: typeof INSPECT_SHAPE_VERSION;
  turn: InspectChatTurn;
  /**
   * The stored chunks in order from `from`, at most `limit` of them and `maxViewBytes` in all; a
   * chunk too large for the view is an {@link InspectTruncated} record.
   */
  chunks: Array<{ type: string; [field: string]: unknown } | InspectTruncated>;
  /** How many chunks the turn stored; more than `chunks.length` when the view was cut. */
  storedCount: number;
  /** The index of the page's first chunk. */
  from: number;
  /** The index of the next chunk to show (pass it as `from`); `null` when the page reached the end. */
  next: number | null;
}

/** What the inspector was given and the state of each part (`GET …/api/overview`). */
export interface InspectOverview {
  version: typeof INSPECT_SHAPE_VERSION;
  /** The object's id (`ctx.id.toString()`). */
  objectId: string;
  parts: InspectPartKind[];
  /** Runs by state, each counted up to {@link InspectCounts.limit}, when `tasks` is a part. */
  runs?: InspectCounts<InspectRunState>;
  /** Streams by state among the newest {@link InspectCounts.limit} streams, when `streams` is a part. */
  streams?: InspectCounts<InspectStream["state"]>;
  /**
   * The tasks part's cron schedules (the first 100 by id), when `tasks` is a part: each one's next
   * tick, latest tick and run, and the ticks it skipped.
   */
  schedules?: InspectSchedule[];
  /**
   * The subscription hub's subscriptions (the first 100 by id), when `subscriptions` (a
   * `DurableStreamsSubscriptions` of `@durablekit/sse`) is a part: each one's status (`failed`
   * while a delivery is retried, `dead` once dead-lettered), open wake and delivery attempts.
   */
  subscriptions?: InspectSubscription[];
}

/**
 * A Durable Streams subscription, as the overview shows it: `@durablekit/sse`'s own view (what
 * the hub's `GET __ds/subscriptions/:id` answers).
 */
export type InspectSubscription = DurableStreamsSubscriptionView;

/**
 * A cron schedule of the tasks part, as the overview shows it: `@durablekit/tasks`'s own snapshot
 * (its next tick, its latest tick and run, the ticks it missed after downtime and skipped for
 * overlap).
 */
export type InspectSchedule = TaskScheduleSnapshot;

/**
 * Counts by state over a bounded read: exact when `complete`, else lower bounds. Runs are counted
 * per state, each up to `limit`, from the tasks part's index of runs by state (no run is read);
 * streams among the newest `limit`.
 */
export interface InspectCounts<State extends string> {
  byState: Record<State, number>;
  /** The most items counted (per state, for runs). */
  limit: number;
  /** False when some count stopped at `limit`: see `capped`. */
  complete: boolean;
  /** The states whose count stopped at `limit` (more are held); `[]` when `complete`. */
  capped: State[];
}
