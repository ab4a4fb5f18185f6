import { check, checkName, checkOptions } from "./arguments";
import { TasksError } from "./errors";
import type { TaskErrorInfo, TaskEvent } from "./events";
import { COMPENSATION_PREFIX, type RunRow, type TaskStepKind, TERMINAL_STATES } from "./store/rows";
import type { RunLogEntry, RunLogStore } from "./store/run-log-store";
import type { RunStore } from "./store/run-store";
import { errorInfo } from "./values";

/** What every event of a run's stream carries beside its `onEvent` fields: its number and time. */
interface RunEventPosition {
  /** Its number in the run's sequence: 0, 1, 2, … in the order the events were written. */
  seq: number;
  /** When it was written (epoch ms, the engine's clock). */
  at: number;
}

/** The `onEvent` event of type `T` ({@link TaskEvent}, `runId` and `definition` included), numbered. */
type Logged<T extends TaskEvent["type"]> = Extract<TaskEvent, { type: T }> & RunEventPosition;

/** A step that settled: its journal row is its event. */
interface SettledStep extends RunEventPosition {
  runId: string;
  definition: string;
  step: string;
  attempt: number;
}

/**
 * One event of a run's stream ({@link TaskRunEventLog}): its lifecycle as it was written, each with
 * the fields of the `onEvent` event of the same `type` ({@link TaskEvent}) and its `seq` and `at`.
 * A step is an event once it settles (completed, or failed for good), with its `kind`; its result
 * is not part of the stream (read it with `steps()`).
 */
export type TaskRunEvent =
  | Logged<"task:accepted">
  /** Accepted `queued` by flow control, for `reason`. */
  | Logged<"task:queued">
  /** A queued run took its slot. */
  | Logged<"task:dequeued">
  | Logged<"task:attempt:started">
  /** The attempt `attempt` was cut short (its object died), in `step` if known. */
  | Logged<"task:attempt:interrupted">
  | (Logged<"task:step:completed"> & { kind: TaskStepKind })
  | (SettledStep & { type: "task:step:failed"; kind: TaskStepKind; error: TaskErrorInfo })
  /** A step's compensation (its `compensate` option) settled, after the run failed or was cancelled; `step` is the step it undid. */
  | (SettledStep & { type: "task:compensation:completed" })
  | (SettledStep & { type: "task:compensation:failed"; error: TaskErrorInfo })
  | Logged<"task:step:retry">
  /** `step`: the step the run parked at. */
  | (Logged<"task:waiting"> & { step: string | null })
  | Logged<"task:paused">
  | Logged<"task:resumed">
  | Logged<"task:restarted">
  | Logged<"task:completed">
  | Logged<"task:failed">
  | Logged<"task:cancelled">;

/** The `type` of every {@link TaskRunEvent}. */
export type TaskRunEventType = TaskRunEvent["type"];

/** Where a run's stream stands ({@link TaskRunEventLog.status}). */
export interface TaskRunEventStatus {
  /** The number the next event takes: how many the run has written. */
  cursor: number;
  /** Always `"json"`: each event is a JSON object. */
  encoding: "json";
  /** `"completed"` once the run is settled (a restart opens it again), else `"streaming"`. */
  state: "streaming" | "completed";
  /** Always null (a failed run's error is its last event). */
  error: null;
}

/** A run's event as a stream chunk: what `readBatches` yields. */
export interface TaskRunEventChunk {
  seq: number;
  chunk: TaskRunEvent;
}

/** Options of {@link TaskRunEventLog.read}. */
export interface TaskRunEventReadOptions {
  /** First event number to yield (inclusive). Default 0. */
  from?: number;
  /** Ends the read, a tail included, by throwing the signal's reason. */
  signal?: AbortSignal;
}

/** Options of {@link TaskRunEventLog.readBatches}. */
export interface TaskRunEventBatchOptions extends TaskRunEventReadOptions {
  /** Most events per replayed batch, 1–1000. Default 100. */
  batchSize?: number;
  /** Called once, when the reader first has every event written so far. */
  onUpToDate?: () => void;
  /** Called once, just before the read ends because the run was deleted under it. */
  onGone?: (reason: "deleted") => void;
}

/** Options of {@link TaskRunEventLog.readPage}. */
export interface TaskRunEventPageOptions {
  /** First event number (inclusive). Default 0. */
  from?: number;
  /** Most events, 1–1000. Default 100. */
  limit?: number;
}

/** One page of a run's events ({@link TaskRunEventLog.readPage}), in the shape of a `Streams` page. */
export interface TaskRunEventPage {
  /** The events as `{ seq, chunk }`: `chunk` is the event. */
  chunks: TaskRunEventChunk[];
  /** The number the next event takes when the page was read. */
  cursor: number;
  /** Where the next page starts. */
  next: number;
  /** True when the page reaches `cursor`. */
  upToDate: boolean;
  state: TaskRunEventStatus["state"];
}

const MAX_BATCH = 1000;
/** Events a replay reads per query. */
const REPLAY_PAGE = 1000;

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The read was aborted.", "AbortError");
}

/**
 * A run's lifecycle as a durable stream with a cursor: `tasks.events`. Every event has a number
 * (`seq`), 0, 1, 2, … in the order it was written, and a read from any number replays the events
 * from there and then tails the new ones, so a reader that stops (a reload, a dropped connection,
 * the object restarted) resumes after the last number it saw and misses nothing.
 *
 * The stream costs no row per step: a settled step is its own journal row, which carries its
 * number. Every other transition (accepted, an attempt started or cut short, a park, a retry, a
 * pause, a resume, a restart, the settlement) is one row written in the transaction of the write it
 * records. A restart keeps the events of the steps it dropped. A run's events are deleted with it
 * (`retain: false` runs when they complete, settled runs by `delete()`).
 *
 * Its methods have the shape of `Streams`' reads, so `sseResponse(this.tasks.events, runId, {
 * request })` of `@durablekit/sse` serves a run's events as Server-Sent Events that resume with
 * `Last-Event-ID`.
 */
export class TaskRunEventLog {
  readonly #runs: RunStore;
  readonly #log: RunLogStore;

  /** @internal Made by `Tasks`; read it as `tasks.events`. */
  constructor(runs: RunStore, log: RunLogStore) {
    this.#runs = runs;
    this.#log = log;
  }

  /**
   * Where a run's stream stands, or null when the run does not exist.
   * @throws TasksError `tasks/invalid-argument` for a malformed run id.
   */
  status(runId: string): TaskRunEventStatus | null {
    checkName(runId, "A run id", false);
    const row = this.#runs.headOf(runId);
    if (row === undefined) return null;
    return { cursor: this.#log.next(runId), encoding: "json", state: stateOf(row), error: null };
  }

  /**
   * Reads up to `limit` events from `from` synchronously, with the cursor and state at that moment:
   * a catch-up read that never waits.
   * @throws TasksError `tasks/not-found` for an unknown run; `tasks/invalid-argument` for a malformed run id, `from` or `limit`.
   */
  readPage(runId: string, options: TaskRunEventPageOptions = {}): TaskRunEventPage {
    checkName(runId, "A run id", false);
    checkOptions(options, "readPage() options");
    const from = checkFrom(options.from);
    const limit = check.count(options.limit, "limit", 100, { max: MAX_BATCH });
    const row = this.#runs.headOf(runId);
    if (row === undefined) throw notFound(runId);
    const cursor = this.#log.next(runId);
    const chunks = this.#log
      .page(runId, from, limit)
      .map((entry) => ({ seq: entry.ev, chunk: toEvent(entry, row) }));
    const last = chunks[chunks.length - 1];
    const next = last === undefined ? from : last.seq + 1;
    return { chunks, cursor, next, upToDate: next >= cursor, state: stateOf(row) };
  }

  /**
   * Replays a run's events from `from` (inclusive), then tails new ones; ends when the run is
   * settled and every event has been yielded, or quietly when it is deleted.
   * @throws TasksError `tasks/invalid-argument` for a malformed run id or option (at the call), `tasks/not-found` (at the first iteration) for an unknown run.
   * @throws the signal's reason when `signal` aborts.
   */
  read(runId: string, options: TaskRunEventReadOptions = {}): AsyncGenerator<TaskRunEvent> {
    checkOptions(options, "read() options");
    const batches = this.readBatches(runId, { ...options, batchSize: 256 });
    return (async function* () {
      for await (const batch of batches) for (const { chunk } of batch) yield chunk;
    })();
  }

  /**
   * {@link read} in non-empty arrays of `{ seq, chunk }` (the shape `@durablekit/sse` serves):
   * replay in slices of `batchSize`; each wake of the tail yields everything new as one array.
   * @throws as {@link read}, and `tasks/invalid-argument` for a malformed `batchSize`, `onUpToDate` or `onGone`.
   */
  readBatches(
    runId: string,
    options: TaskRunEventBatchOptions = {},
  ): AsyncGenerator<TaskRunEventChunk[]> {
    checkName(runId, "A run id", false);
    checkOptions(options, "readBatches() options");
    const from = checkFrom(options.from);
    const batchSize = check.count(options.batchSize, "batchSize", 100, { max: MAX_BATCH });
    const signal = options.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TasksError("tasks/invalid-argument", "signal must be an AbortSignal.");
    }
    check.callback(options.onUpToDate, "onUpToDate");
    check.callback(options.onGone, "onGone");
    return this.#batches(runId, from, batchSize, signal, options.onUpToDate, options.onGone);
  }

  async *#batches(
    runId: string,
    from: number,
    batchSize: number,
    signal: AbortSignal | undefined,
    onUpToDate: (() => void) | undefined,
    onGone: ((reason: "deleted") => void) | undefined,
  ): AsyncGenerator<TaskRunEventChunk[]> {
    const first = this.#runs.headOf(runId);
    if (first === undefined) throw notFound(runId);
    let next = from;
    // Entries read and not yet yielded (a replay's page is larger than a batch).
    let read: RunLogEntry[] = [];
    let reachedTail = false;
    let waiter: (() => void) | null = null;
    const onAbort = () => waiter?.();
    signal?.addEventListener("abort", onAbort);
    this.#log.follow(runId);
    try {
      for (;;) {
        if (signal?.aborted) throw abortReason(signal);
        // The page, the run's state and the park below are one synchronous block: an event
        // written after the page wakes the park, never falls between them.
        const row = this.#runs.headOf(runId);
        if (row === undefined) {
          onGone?.("deleted");
          return;
        }
        // A tailing reader takes what was just written from memory; a replay reads the tables,
        // a few pages' worth per query (each query passes over the run's journal once).
        if (read.length === 0) {
          read =
            this.#log.recent(runId, next, batchSize) ?? this.#log.page(runId, next, REPLAY_PAGE);
        }
        const entries = read.slice(0, batchSize);
        read = read.slice(batchSize);
        if (entries.length > 0) {
          next = (entries[entries.length - 1] as RunLogEntry).ev + 1;
          yield entries.map((entry) => ({ seq: entry.ev, chunk: toEvent(entry, row) }));
          // Events written while the consumer held the batch woke no one: read again first.
          continue;
        }
        if (!reachedTail) {
          reachedTail = true;
          onUpToDate?.();
          continue;
        }
        if (TERMINAL_STATES.has(row.state)) return;
        if (signal?.aborted) throw abortReason(signal);
        await new Promise<void>((wake) => {
          waiter = wake;
          this.#log.park(runId, wake);
        });
        if (waiter !== null) this.#log.unpark(runId, waiter);
        waiter = null;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (waiter !== null) this.#log.unpark(runId, waiter);
      this.#log.unfollow(runId);
    }
  }
}

/** The columns of a run row its events are read with. */
type RunHead = Pick<RunRow, "run_id" | "definition" | "state">;

function stateOf(row: RunHead): TaskRunEventStatus["state"] {
  return TERMINAL_STATES.has(row.state) ? "completed" : "streaming";
}

function notFound(runId: string): TasksError {
  return new TasksError("tasks/not-found", `No run "${runId}" exists; check the run id.`);
}

function checkFrom(from: unknown): number {
  if (from === undefined) return 0;
  if (typeof from !== "number" || !Number.isSafeInteger(from) || from < 0) {
    throw new TasksError(
      "tasks/invalid-argument",
      `from must be an event number (an integer ≥ 0); got ${String(from)}.`,
    );
  }
  return from;
}

/** The event of one stored entry of a run's sequence. */
function toEvent(entry: RunLogEntry, row: RunHead): TaskRunEvent {
  const ref = { seq: entry.ev, at: entry.at, runId: row.run_id, definition: row.definition };
  if (entry.source === "step" && entry.name.startsWith(COMPENSATION_PREFIX)) {
    const undo = { step: entry.name.slice(COMPENSATION_PREFIX.length), attempt: entry.attempt };
    return entry.state === "failed"
      ? { type: "task:compensation:failed", ...ref, ...undo, error: errorInfo(entry.error) }
      : { type: "task:compensation:completed", ...ref, ...undo };
  }
  if (entry.source === "step") {
    const step = { step: entry.name, kind: entry.kind, attempt: entry.attempt };
    return entry.state === "failed"
      ? { type: "task:step:failed", ...ref, ...step, error: errorInfo(entry.error) }
      : { type: "task:step:completed", ...ref, ...step };
  }
  const data = entry.data === null ? {} : (JSON.parse(entry.data) as object);
  return { type: entry.type, ...ref, ...data } as TaskRunEvent;
}
