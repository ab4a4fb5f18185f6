import { DuplicateStepError, isNonRetryable, ReplayDivergedError, TasksError } from "./errors";
import type { TaskEvent } from "./events";
import type { Journal, JournalRow } from "./journal";
import { JournalWriter, stepRow } from "./journal-writer";
import { validateName } from "./names";
import { isPlatformFailure, isPlatformReset } from "./platform";
import { retryDelay, type StepPolicy } from "./policy";
import type { StepKind, StepRow, WaitReason } from "./rows";
import { AttemptEnded, isAttemptEnded } from "./signals";
import { FenceLost, type TaskStore } from "./store";
import { encodeValue, errorInfo, errorText, rebuildError } from "./values";
import { Watchdog } from "./watchdog";

/** What an attempt needs from the engine that owns it. */
export interface AttemptDeps {
  store: TaskStore;
  defaults: StepPolicy;
  maxValueBytes: number;
  maxSteps: number;
  /** False when nobody listens to events: the per-step events are then not even built. */
  listening: boolean;
  emit(event: TaskEvent): void;
  requestWake(at: number): void;
  /** Called once when the attempt ends, whichever way. */
  release(attempt: Attempt): void;
  onFailed(error: Error, runId: string, definition: string): void;
}

/** The identity of one claimed attempt. */
export interface AttemptInit {
  runId: string;
  definition: string;
  generation: string;
  number: number;
  retain: boolean;
  journal: Journal;
  /** Attempt 1 starts live; a replay goes live at its frontier (see {@link Attempt.goLive}). */
  startsLive: boolean;
}

/**
 * One claimed execution of a run's handler, and every durable transition it makes: step
 * boundaries, parks and settles. All writes are fenced on the attempt's generation: once another
 * attempt holds the run, this one ends as `superseded` without writing anything more. Journal
 * writes go through its {@link JournalWriter}.
 */
export class Attempt {
  readonly runId: string;
  readonly definition: string;
  readonly generation: string;
  readonly number: number;
  readonly journal: Journal;
  /** Times out in-flight steps; cancel and the end of the attempt fail them through it. */
  readonly watchdog = new Watchdog();
  /** The attempt's chained, fenced journal writes. */
  readonly writer: JournalWriter;
  readonly deps: AttemptDeps;
  readonly #retain: boolean;
  #live: boolean;
  #ended: AttemptEnded | null = null;
  #fatal: Error | null = null;
  #cancel: { reason: string | null } | null = null;
  #used = new Set<string>();
  #newSteps = 0;
  #lastStatus: string | undefined;

  constructor(deps: AttemptDeps, init: AttemptInit) {
    this.deps = deps;
    this.runId = init.runId;
    this.definition = init.definition;
    this.generation = init.generation;
    this.number = init.number;
    this.journal = init.journal;
    this.#retain = init.retain;
    this.#live = init.startsLive;
    this.writer = new JournalWriter(
      deps.store,
      init.runId,
      init.generation,
      () => this.#end("superseded"),
      (name) => init.journal.has(name),
    );
  }

  get ended(): AttemptEnded | null {
    return this.#ended;
  }

  get cancelRequested(): boolean {
    return this.#cancel !== null;
  }

  emit(event: TaskEvent): void {
    this.deps.emit(event);
  }

  /** Marks the frontier of new ground: from here on `status()` publishes again. */
  goLive(): void {
    this.#live = true;
  }

  /**
   * Checks a step boundary before any journal lookup: the attempt is still open, the name is valid
   * and unused, and no cancel is pending (a pending cancel settles the run here).
   */
  enter(name: string): void {
    if (this.#ended) throw this.#ended;
    if (this.#fatal) throw this.#fatal;
    validateName(name, "A step name");
    if (this.#used.has(name)) this.#failFatal(new DuplicateStepError(name));
    this.#used.add(name);
    if (this.#cancel) throw this.settleCancelled();
  }

  /** Fails the replay if the journal holds another kind (or event type) at this name. */
  expect(row: JournalRow, kind: StepKind, eventType?: string): void {
    if (row.kind !== kind) {
      this.#failFatal(
        new ReplayDivergedError(row.name, `journaled as a ${row.kind} step, replayed as ${kind}`),
      );
    }
    if (eventType !== undefined && row.event_type !== eventType) {
      this.#failFatal(
        new ReplayDivergedError(
          row.name,
          `journaled waiting for "${row.event_type}", replayed waiting for "${eventType}"`,
        ),
      );
    }
  }

  /** Counts a step journaled for the first time against the run's step limit. */
  countNewStep(): void {
    if (this.journal.size + this.#newSteps >= this.deps.maxSteps) {
      this.#failFatal(
        new TasksError(
          "tasks/step-limit",
          `Run "${this.runId}" reached ${this.deps.maxSteps} steps; split the work across several runs or raise maxStepsPerRun.`,
        ),
      );
    }
    this.#newSteps++;
  }

  #failFatal(error: Error): never {
    this.#fatal = error;
    throw error;
  }

  /** Encodes a value under the engine's size limit. */
  encode(value: unknown, path: string): string {
    return encodeValue(value, this.deps.maxValueBytes, path);
  }

  /**
   * Decides what a failed step attempt becomes, and returns what the step call throws: a rebuilt
   * error (terminal failure, journaled), or the end signal (retry park, cancel, supersede, platform).
   */
  stepFailed(
    name: string,
    seq: number,
    attempt: number,
    policy: StepPolicy,
    thrown: unknown,
  ): unknown {
    if (isAttemptEnded(thrown)) return thrown;
    if (this.#ended) return this.#ended;
    if (this.#cancel) return this.settleCancelled();
    if (isPlatformReset(thrown)) return this.abandon();
    const serialization = thrown instanceof TasksError && thrown.code === "tasks/serialization";
    const record = errorText(thrown);
    if (!isNonRetryable(thrown) && !serialization && attempt < policy.limit) {
      const retryAt = Date.now() + retryDelay(policy, attempt);
      this.emit({
        type: "task:step:retry",
        runId: this.runId,
        definition: this.definition,
        step: name,
        attempt,
        retryAt,
        error: errorInfo(record),
      });
      return this.park("retry", retryAt, [
        ...this.writer.take(null),
        stepRow(name, seq, "do", {
          state: "waiting",
          attempt,
          value: record,
          wake_at: retryAt,
        }),
      ]);
    }
    if (isPlatformFailure(thrown)) return this.abandon();
    const failed = stepRow(name, seq, "do", { state: "failed", attempt, value: record });
    if (!this.writer.write([...this.writer.take(null), failed])) return this.#ended;
    return rebuildError(record);
  }

  /** Records a terminal failure of a step that is not a `do` (an event wait's timeout). */
  failStep(
    name: string,
    seq: number,
    kind: StepKind,
    error: Error,
    eventType: string | null,
  ): Error {
    const record = errorText(error);
    const row = stepRow(name, seq, kind, {
      state: "failed",
      value: record,
      event_type: eventType,
    });
    if (!this.writer.write([...this.writer.take(null), row])) throw this.#ended;
    return rebuildError(record);
  }

  /**
   * Completes an event wait from the buffer: the step row and the deletion of the buffered event
   * are one transaction, so an event is consumed exactly once.
   */
  consumeEvent(
    name: string,
    seq: number,
    eventType: string,
    eventSeq: number,
    payload: string,
  ): void {
    const row = stepRow(name, seq, "event", { value: payload, event_type: eventType });
    const rows = [...this.writer.take(name), row];
    if (!this.writer.write(rows, () => this.deps.store.deleteEvent(this.runId, eventSeq))) {
      throw this.#ended;
    }
  }

  /**
   * Parks the run: the run row, the pending rows and the step row that waits are one transaction.
   * Returns the end signal the step call throws. A pending cancel wins over the park.
   */
  park(
    reason: WaitReason,
    wakeAt: number | null,
    rows: StepRow[],
    waitStep: string | null = null,
    waitEvent: string | null = null,
  ): AttemptEnded {
    if (this.#ended) return this.#ended;
    if (this.#cancel) return this.settleCancelled();
    const { store } = this.deps;
    try {
      store.transaction(() => {
        const now = Date.now();
        if (!store.park(this.runId, this.generation, reason, wakeAt, waitStep, waitEvent, now)) {
          throw new FenceLost(this.runId);
        }
        for (const row of rows) store.writeStep(this.runId, row);
      });
    } catch (error) {
      if (error instanceof FenceLost) return this.#end("superseded");
      throw error;
    }
    this.emit({
      type: "task:waiting",
      runId: this.runId,
      definition: this.definition,
      reason,
      wakeAt,
      ...(waitEvent === null ? {} : { eventType: waitEvent }),
    });
    if (wakeAt !== null) this.deps.requestWake(wakeAt);
    return this.#end("parked");
  }

  /** Parks on a step that already has its row; only the pending rows are written with the run. */
  parkAgain(
    reason: WaitReason,
    wakeAt: number | null,
    waitStep?: string,
    waitEvent?: string,
  ): AttemptEnded {
    return this.park(reason, wakeAt, this.writer.take(null), waitStep ?? null, waitEvent ?? null);
  }

  /** Park with a new waiting step row, chained after the pending rows. */
  parkNew(
    reason: WaitReason,
    wakeAt: number | null,
    row: StepRow,
    waitEvent?: string,
  ): AttemptEnded {
    return this.park(
      reason,
      wakeAt,
      [...this.writer.take(row.name), row],
      waitEvent === undefined ? null : row.name,
      waitEvent ?? null,
    );
  }

  /** Publishes a status message when live; replayed ground stays silent. */
  writeStatus(message: string): void {
    if (!this.#live || this.#ended || message === this.#lastStatus) return;
    if (this.deps.store.writeStatus(this.runId, this.generation, message, Date.now())) {
      this.#lastStatus = message;
    }
  }

  /** Asks the attempt to stop: the in-flight step is aborted and the run settles at its next boundary. */
  requestCancel(reason: string | null): void {
    this.#cancel = { reason };
    this.watchdog.failAll(
      new DOMException(
        `Run "${this.runId}" was cancelled${reason === null ? "" : `: ${reason}`}.`,
        "AbortError",
      ),
    );
  }

  /** Settles the run as completed with the handler's result. */
  settleCompleted(value: unknown): void {
    if (this.#ended) return;
    if (this.#fatal || this.#cancel) {
      this.settleThrown(this.#fatal);
      return;
    }
    let result: string;
    try {
      result = this.encode(value, "result");
    } catch (error) {
      this.settleFailed(error);
      return;
    }
    const { store } = this.deps;
    const rows = this.writer.take(null);
    let settled = false;
    store.transaction(() => {
      const now = Date.now();
      if (this.#retain) {
        settled = store.settle(this.runId, this.generation, { state: "completed", result }, now);
        if (settled) for (const row of rows) store.writeStep(this.runId, row);
      } else {
        settled = store.deleteSettledByAttempt(this.runId, this.generation);
      }
    });
    if (!settled) {
      this.#end("superseded");
      return;
    }
    const ref = { runId: this.runId, definition: this.definition };
    this.emit({ type: "task:completed", ...ref });
    if (!this.#retain) this.emit({ type: "task:deleted", ...ref });
    this.#end("settled");
  }

  /** Settles the run as failed; `onError` sees the error. */
  settleFailed(thrown: unknown): void {
    if (this.#ended) return;
    const record = errorText(thrown);
    const { store } = this.deps;
    const rows = this.writer.take(null);
    let settled = false;
    store.transaction(() => {
      settled = store.settle(
        this.runId,
        this.generation,
        { state: "failed", error: record },
        Date.now(),
      );
      if (settled) for (const row of rows) store.writeStep(this.runId, row);
    });
    if (!settled) {
      this.#end("superseded");
      return;
    }
    this.emit({
      type: "task:failed",
      runId: this.runId,
      definition: this.definition,
      error: errorInfo(record),
    });
    this.#end("settled");
    this.deps.onFailed(
      thrown instanceof Error ? thrown : rebuildError(record),
      this.runId,
      this.definition,
    );
  }

  /** Settles the run as cancelled (a requested cancel reached a boundary). */
  settleCancelled(): AttemptEnded {
    if (this.#ended) return this.#ended;
    const reason = this.#cancel?.reason ?? null;
    const { store } = this.deps;
    const rows = this.writer.take(null);
    let settled = false;
    store.transaction(() => {
      settled = store.settle(
        this.runId,
        this.generation,
        { state: "cancelled", cancelReason: reason },
        Date.now(),
      );
      if (settled) for (const row of rows) store.writeStep(this.runId, row);
    });
    if (!settled) return this.#end("superseded");
    this.emit({ type: "task:cancelled", runId: this.runId, definition: this.definition, reason });
    return this.#end("cancelled");
  }

  /** Gives the run up without writing: its claim deadline replays it on a healthy isolate. */
  abandon(): AttemptEnded {
    return this.#ended ?? this.#end("abandoned");
  }

  /** Handles whatever the handler threw. */
  settleThrown(thrown: unknown): void {
    if (this.#ended) return;
    if (isAttemptEnded(thrown)) {
      this.#end(thrown.how);
      return;
    }
    if (this.#fatal) {
      this.settleFailed(this.#fatal);
      return;
    }
    if (this.#cancel) {
      this.settleCancelled();
      return;
    }
    if (isPlatformFailure(thrown)) {
      this.abandon();
      return;
    }
    this.settleFailed(thrown);
  }

  #end(how: AttemptEnded["how"]): AttemptEnded {
    if (this.#ended) return this.#ended;
    this.#ended = new AttemptEnded(how);
    this.writer.pending.length = 0;
    this.deps.release(this);
    this.watchdog.stop();
    this.watchdog.failAll(new DOMException(`The attempt ended (${how}).`, "AbortError"));
    return this.#ended;
  }
}
