import { checkName } from "../arguments";
import type { ChildSteps } from "../children/child-steps";
import { isNonRetryable, RunTimeoutError, TasksError } from "../errors";
import type { TaskEvent } from "../events";
import { retryDelay, type StepPolicy } from "../policy";
import { StepBoundaries } from "../steps/boundaries";
import { type Compensation, inReverse } from "../steps/compensation";
import type { Journal } from "../steps/journal";
import { JournalWriter, stepRow } from "../steps/journal-writer";
import type { ReplayStep } from "../steps/step";
import type { StepEngine } from "../steps/step-engine";
import { StepJournal } from "../steps/step-journal";
import type { EventRow, StepRow, TaskStepKind, TaskWaitReason } from "../store/rows";
import type { Settlement } from "../store/run-store";
import { FenceLost, type TaskStore } from "../store/store";
import { encodeValue, errorInfo, errorText, rebuildError } from "../values";
import { isPlatformFailure, isPlatformReset } from "./platform";
import { AttemptEnded, isAttemptEnded } from "./signals";
import { type Flight, Watchdog } from "./watchdog";

/** What an attempt needs from the engine that owns it. */
export interface AttemptDeps {
  store: TaskStore;
  defaults: StepPolicy;
  maxValueBytes: number;
  maxSteps: number;
  /** False when nobody listens to events: the per-step events are then not even built. */
  listening: boolean;
  now: () => number;
  emit(event: TaskEvent): void;
  requestWake(at: number): void;
  /** Called once when the attempt ends, whichever way. */
  release(attempt: Attempt): void;
  onFailed(error: Error, runId: string, definition: string): void;
  /** Runs in other objects (the `children` option), or null. */
  children: () => ChildSteps | null;
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
  /** When the run fails with `tasks/run-timeout`, or null. */
  deadlineAt: number | null;
  /**
   * A cancel recorded before the claim, for a run with compensations: the attempt replays the
   * journal to its frontier (collecting them), then undoes the completed steps and settles the run
   * cancelled. Null for an ordinary claim.
   */
  cancel: { reason: string | null } | null;
}

/**
 * One claimed execution of a run's handler: its state (open, fatal, cancel requested, ended), the
 * bookkeeping of its step boundaries, and every way it stops going forward — a failed step becomes
 * a retry park or a journaled failure, a wait parks the run, the handler's end settles it. It is
 * the {@link StepEngine} its steps drive.
 *
 * Every write is fenced on the attempt's generation and is one transaction: once another attempt
 * holds the run, this one ends as `superseded` without writing anything more. Journal writes go
 * through its {@link JournalWriter}.
 */
export class Attempt implements StepEngine {
  // ── Identity and state ──
  readonly runId: string;
  readonly definition: string;
  readonly generation: string;
  readonly number: number;
  readonly boundaries: StepBoundaries;
  readonly #deps: AttemptDeps;
  /** Whether the records of the run are kept when it completes. */
  readonly #retain: boolean;
  /** Times out in-flight steps; cancel and the end of the attempt fail them through it. */
  readonly #watchdog: Watchdog;
  /** The attempt's chained, fenced journal writes. */
  readonly #writer: JournalWriter;
  /** False while replaying journaled ground: `status()` stays silent until the frontier. */
  #live: boolean;
  /** Set once; every later step call throws it again, so swallowing it cannot make the attempt write. */
  #ended: AttemptEnded | null = null;
  /** A stop asked of this attempt (a cancel, or the run's deadline passed): it settles at its next boundary. */
  #stop: { kind: "cancel"; reason: string | null } | { kind: "timeout"; error: TasksError } | null =
    null;
  /** When the run fails with `tasks/run-timeout`, or null. */
  readonly #deadlineAt: number | null;
  /** A pause asked of this attempt: it holds the run at its next step boundary. */
  #pause = false;
  /** The errors of steps that failed for good: rethrown by the handler, they fail the run. */
  readonly #stepFailures = new WeakSet<object>();
  /** The compensations of the steps completed so far (see `steps/compensation.ts`). */
  readonly #compensations: Compensation[] = [];
  /** True once a step with a compensation was called: it may complete and need undoing. */
  #compensable = false;
  /** A cancel from before the claim: it stops the attempt at its frontier, not at a replayed step. */
  #stopAtFrontier = false;
  /** True once this attempt started the run's compensations. */
  #compensating = false;
  #lastStatus: string | undefined;
  /** The step journals this attempt took, by name: one object per name, so one view of its rows. */
  readonly #stepJournals = new Map<string, StepJournal>();

  constructor(deps: AttemptDeps, init: AttemptInit) {
    this.#deps = deps;
    this.runId = init.runId;
    this.definition = init.definition;
    this.generation = init.generation;
    this.number = init.number;
    this.boundaries = new StepBoundaries(init.journal, init.runId, deps.maxSteps);
    this.#retain = init.retain;
    this.#live = init.startsLive;
    this.#deadlineAt = init.deadlineAt;
    if (init.cancel !== null) {
      this.#stop = { kind: "cancel", reason: init.cancel.reason };
      this.#stopAtFrontier = true;
    }
    this.#watchdog = new Watchdog(deps.now);
    this.#writer = new JournalWriter(
      deps.store,
      init.runId,
      init.generation,
      () => this.end("superseded"),
      (name) => init.journal.has(name),
    );
  }

  get defaults(): StepPolicy {
    return this.#deps.defaults;
  }

  get listening(): boolean {
    return this.#deps.listening;
  }

  get ended(): AttemptEnded | null {
    return this.#ended;
  }

  /** True when a cancel was asked or the run's deadline passed: the attempt settles at its next boundary. */
  get stopRequested(): boolean {
    return this.#stop !== null;
  }

  /**
   * True when a stop can settle the run from outside, without the handler reaching a boundary: a
   * deadline, or a cancel of a run with no compensations to run first (those run in the attempt).
   */
  get stopSettlesNow(): boolean {
    if (!this.#stopsHere()) return false;
    return this.#stop?.kind === "timeout" || !this.#compensable;
  }

  /** When the run fails with `tasks/run-timeout`, or null. */
  get deadlineAt(): number | null {
    return this.#deadlineAt;
  }

  get pauseRequested(): boolean {
    return this.#pause;
  }

  now(): number {
    return this.#deps.now();
  }

  emit(event: TaskEvent): void {
    this.#deps.emit(event);
  }

  // ── Step boundaries ──

  goLive(): void {
    this.#live = true;
    // A cancel from before the claim stops here, once every replayed step was passed (and kept
    // its compensation).
    if (this.#stopAtFrontier && this.#stopsHere()) throw this.settleStopped();
  }

  /**
   * Whether a stop acts at this boundary: a deadline always; a cancel unless the attempt is undoing
   * the run's steps (compensations run to the end), or is still replaying for a cancel that stops
   * it at its frontier.
   */
  #stopsHere(): boolean {
    const stop = this.#stop;
    if (stop === null) return false;
    if (stop.kind === "timeout") return true;
    if (this.#compensating) return false;
    return !this.#stopAtFrontier || this.#live;
  }

  enter(name: string, internal = false): void {
    if (this.#ended) throw this.#ended;
    this.boundaries.enter(name, internal);
    // A cancel requested (or the deadline passed) while the handler ran between steps settles the
    // run at this boundary; a pause holds it here, before the step runs.
    this.checkDeadline();
    if (this.#stopsHere()) throw this.settleStopped();
    if (this.#pause) throw this.holdPaused(name);
  }

  // ── Steps in flight ──

  markInFlight(name: string, seq: number, attempt: number): boolean {
    return this.#writer.markStarted(name, seq, attempt, this.#deps.now());
  }

  track(flight: Flight): () => void {
    this.#watchdog.track(flight);
    return () => this.#watchdog.untrack(flight);
  }

  encode(value: unknown, path: string): string {
    return encodeValue(value, this.#deps.maxValueBytes, path);
  }

  record(row: StepRow, extra?: () => void): boolean {
    // Written now, synchronously, before the step's promise resolves (see JournalWriter).
    return this.#writer.write(row, extra);
  }

  stepFailed(
    name: string,
    seq: number,
    attempt: number,
    policy: StepPolicy,
    thrown: unknown,
  ): Error | AttemptEnded {
    if (isAttemptEnded(thrown)) return thrown;
    if (this.#ended) return this.#ended;
    if (this.#stopsHere()) return this.settleStopped();
    if (isPlatformReset(thrown)) return this.abandon();
    // A result the codec refuses fails the same way on every attempt: it is never retried.
    const unstorable =
      thrown instanceof TasksError &&
      (thrown.code === "tasks/unserializable" ||
        thrown.code === "tasks/too-large" ||
        thrown.code === "tasks/too-deep");
    const record = errorText(thrown);
    const retryable = !isNonRetryable(thrown) && !unstorable;
    if (retryable && attempt < policy.limit) {
      const retryAt = this.#deps.now() + retryDelay(policy, attempt);
      this.emit({
        type: "task:step:retry",
        runId: this.runId,
        definition: this.definition,
        step: name,
        attempt,
        retryAt,
        error: errorInfo(record),
      });
      return this.#park(
        "retry",
        retryAt,
        stepRow(name, seq, "do", this.#deps.now(), {
          state: "waiting",
          attempt,
          value: record,
          wake_at: retryAt,
        }),
      );
    }
    if (retryable && policy.onExhausted === "pause") {
      // Its attempts are used up: the run is held at the step, its last error kept, until an
      // operator resumes it; the step then runs once more (a due retry, from its row).
      this.#pause = true;
      const now = this.#deps.now();
      return this.#park(
        "retry",
        now,
        stepRow(name, seq, "do", now, { state: "waiting", attempt, value: record, wake_at: now }),
      );
    }
    // Whatever its properties (`retryable` included), an error thrown by a step callback is the
    // step's failure: it counted toward the step's retries above, and now fails the step.
    const failed = stepRow(name, seq, "do", this.#deps.now(), {
      state: "failed",
      attempt,
      value: record,
    });
    if (!this.#writer.write(failed)) return this.end("superseded");
    return this.journaledFailure(record);
  }

  journaledFailure(record: string | null): Error {
    const error = rebuildError(record);
    this.#stepFailures.add(error);
    return error;
  }

  failStep(
    name: string,
    seq: number,
    kind: TaskStepKind,
    error: Error,
    eventType: string | null,
  ): Error {
    const record = errorText(error);
    const row = stepRow(name, seq, kind, this.#deps.now(), {
      state: "failed",
      value: record,
      event_type: eventType,
    });
    if (!this.#writer.write(row)) throw this.end("superseded");
    return this.journaledFailure(record);
  }

  // ── Event waits ──

  peekEvent(type: string): EventRow | undefined {
    return this.#deps.store.events.peekEvent(this.runId, type);
  }

  consumeEvent(
    name: string,
    seq: number,
    eventType: string,
    eventSeq: number,
    payload: string,
  ): void {
    const row = stepRow(name, seq, "event", this.#deps.now(), {
      value: payload,
      event_type: eventType,
    });
    // The step row and the deletion of the buffered event are one transaction: consumed exactly once.
    const written = this.#writer.write(row, () =>
      this.#deps.store.events.deleteEvent(this.runId, eventSeq),
    );
    if (!written) throw this.end("superseded");
  }

  // ── Parks ──

  parkAgain(
    reason: TaskWaitReason,
    wakeAt: number | null,
    step: string,
    waitEvent?: string,
    extra?: () => void,
  ): AttemptEnded {
    // An event wait names its step on the run row (deliveries match it); the others only here.
    const waitStep = waitEvent === undefined ? null : step;
    return this.#park(reason, wakeAt, null, waitStep, waitEvent ?? null, step, extra);
  }

  parkNew(
    reason: TaskWaitReason,
    wakeAt: number | null,
    row: StepRow,
    waitEvent?: string,
    extra?: () => void,
  ): AttemptEnded {
    return this.#park(
      reason,
      wakeAt,
      row,
      waitEvent === undefined ? null : row.name,
      waitEvent ?? null,
      row.name,
      extra,
    );
  }

  /**
   * Parks the run: the run row and the step row that waits (if new) are one transaction.
   * Returns the end signal the step call throws.
   */
  #park(
    reason: TaskWaitReason,
    wakeAt: number | null,
    row: StepRow | null,
    waitStep: string | null = null,
    waitEvent: string | null = null,
    step: string | null = row?.name ?? waitStep,
    extra?: () => void,
  ): AttemptEnded {
    if (this.#ended) return this.#ended;
    // A pending cancel wins over the park (and the park's SQL refuses it too), unless the attempt
    // is undoing the run's steps for that cancel: a compensation's retry parks as any retry.
    if (this.#stopsHere()) return this.settleStopped();
    const cancelling = this.#stop?.kind === "cancel";
    // A pending pause holds the run instead; the step row is written all the same, so a sleep's
    // deadline or a retry's back-off is fixed as it would have been.
    const pause = this.#pause;
    // A run with a deadline wakes at it at the latest (to fail there), whatever it waits for.
    const deadline = this.#deadlineAt;
    const due =
      deadline === null ? wakeAt : wakeAt === null ? deadline : Math.min(wakeAt, deadline);
    const { store, now } = this.#deps;
    try {
      store.transaction(() => {
        const at = now();
        const held = pause
          ? store.runs.pauseHeld(this.runId, this.generation, at)
          : store.runs.park(
              this.runId,
              this.generation,
              reason,
              due,
              waitStep,
              waitEvent,
              at,
              cancelling,
            );
        if (!held) throw new FenceLost(this.runId);
        if (row) store.steps.writeStep(this.runId, row);
        extra?.();
        // The attempt ends here: at the step it parked at, with a retried step's error.
        const error = reason === "retry" ? (row?.value ?? null) : null;
        store.attempts.parked(this.runId, pause ? "paused" : reason, step, error, at);
        if (pause) store.log.append(this.runId, "task:paused", { step }, at);
        else if (reason === "retry" && row !== null) {
          store.log.append(
            this.runId,
            "task:step:retry",
            { step, attempt: row.attempt, retryAt: wakeAt, error: errorInfo(error) },
            at,
          );
        } else {
          const eventType = waitEvent === null ? {} : { eventType: waitEvent };
          store.log.append(this.runId, "task:waiting", { reason, step, wakeAt, ...eventType }, at);
        }
      });
    } catch (error) {
      if (error instanceof FenceLost) return this.end("superseded");
      throw error;
    }
    if (pause) return this.#paused(step);
    this.emit({
      type: "task:waiting",
      runId: this.runId,
      definition: this.definition,
      reason,
      wakeAt,
      ...(waitEvent === null ? {} : { eventType: waitEvent }),
    });
    if (due !== null) this.#deps.requestWake(due);
    return this.end("parked");
  }

  // ── Compensations ──

  noteCompensable(): void {
    this.#compensable = true;
  }

  registerCompensation(compensation: Compensation): void {
    // The run row learns it once (a cancel of the parked run then replays it to undo its steps).
    if (this.#compensations.length === 0) this.#deps.store.runs.markCompensable(this.runId);
    this.#compensations.push(compensation);
  }

  /**
   * Whether the handler's end calls for the run's compensations before the run settles, once a
   * step with `compensate` was called (it may have completed, or still complete): a cancel
   * (whatever `outcome` is), or a failure of the run's own (`outcome.thrown`: not a platform
   * failure, an engine-fatal error, a deadline or the end of the attempt). `outcome` null: the
   * handler returned.
   */
  mustCompensate(outcome: { thrown: unknown } | null): boolean {
    if (this.#ended || this.#compensating || !this.#compensable) return false;
    if (this.boundaries.fatal) return false;
    const stop = this.#stop;
    if (stop !== null) return stop.kind === "cancel";
    if (outcome === null) return false;
    const thrown = outcome.thrown;
    if (isAttemptEnded(thrown)) return false;
    return !(isPlatformFailure(thrown) && !this.#stepFailures.has(thrown as object));
  }

  /**
   * Runs the compensations of the completed steps, last started first, each a journaled step of
   * its own through `step` (a later attempt finds the ones that completed and goes on from there).
   * A compensation that fails for good is journaled failed and the next one runs; one that parks
   * (its retry), or the end of the attempt, rejects with the end signal.
   */
  async compensate(step: ReplayStep): Promise<void> {
    this.#compensating = true;
    // A step the handler left running beside the one that failed (`Promise.all`) may still
    // complete: wait for the steps in flight to settle (each is bounded by its timeout), and for
    // the turn that keeps their compensations, so a step that completed is undone too.
    await this.#watchdog.idle();
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    for (const compensation of inReverse(this.#compensations)) {
      try {
        await step.compensate(compensation);
      } catch (thrown) {
        if (isAttemptEnded(thrown)) throw thrown;
        if (this.#ended) throw this.#ended;
        // Failed for good: its row says so, and the rest still run.
      }
    }
  }

  // ── Step journals ──

  stepJournal(name: string): StepJournal {
    if (this.#ended) throw this.#ended;
    checkName(name, "A step journal name");
    let journal = this.#stepJournals.get(name);
    if (journal === undefined) {
      const { store, maxValueBytes } = this.#deps;
      journal = new StepJournal(
        this,
        store.calls,
        maxValueBytes,
        name,
        this.boundaries.journal.calls(name),
      );
      this.#stepJournals.set(name, journal);
    }
    return journal;
  }

  // ── Progress ──

  children(): ChildSteps | null {
    return this.#deps.children();
  }

  writeStatus(message: string): void {
    if (!this.#live || this.#ended || message === this.#lastStatus) return;
    const { store, now } = this.#deps;
    if (store.runs.writeStatus(this.runId, this.generation, message, now())) {
      this.#lastStatus = message;
    }
  }

  // ── Settling the run ──

  /** Settles the run as completed with the handler's result. */
  settleCompleted(value: unknown): void {
    if (this.#ended) return;
    if (this.boundaries.fatal || this.#stop) {
      this.settleThrown(this.boundaries.fatal);
      return;
    }
    let result: string;
    try {
      result = this.encode(value, "result");
    } catch (error) {
      this.#settleFailed(error);
      return;
    }
    let settled: boolean;
    if (this.#retain) {
      settled = this.#settleHeld({ state: "completed", result });
    } else {
      const { store, now } = this.#deps;
      // A run that is not retained keeps no journal.
      settled = store.transaction(() =>
        store.deleteSettledByAttempt(this.runId, this.generation, result, now()),
      );
    }
    if (!settled) {
      this.end("superseded");
      return;
    }
    const ref = { runId: this.runId, definition: this.definition };
    this.emit({ type: "task:completed", ...ref });
    if (!this.#retain) this.emit({ type: "task:deleted", ...ref });
    this.end("settled");
  }

  /** Settles the run from whatever the handler threw. */
  settleThrown(thrown: unknown): void {
    if (this.#ended) return;
    if (isAttemptEnded(thrown)) {
      // A stop the handler unwound from before the compensations ran: it settles now.
      if (thrown.how === "stopping") this.settleStopped();
      else this.end(thrown.how);
      return;
    }
    // A fatal error fails the run even when the handler caught it and threw something else.
    if (this.boundaries.fatal) {
      this.#settleFailed(this.boundaries.fatal);
      return;
    }
    if (this.#stop) {
      this.settleStopped();
      return;
    }
    // A platform failure of the handler's own code (not a step's journaled failure rethrown).
    if (isPlatformFailure(thrown) && !this.#stepFailures.has(thrown as object)) {
      this.abandon();
      return;
    }
    this.#settleFailed(thrown);
  }

  /**
   * Settles the run for a stop that reached a boundary: cancelled for a cancel, failed with
   * `tasks/run-timeout` for a deadline that passed.
   */
  settleStopped(): AttemptEnded {
    if (this.#ended) return this.#ended;
    const stop = this.#stop;
    if (stop?.kind === "timeout") {
      this.#settleFailed(stop.error);
      return this.#ended ?? this.end("settled");
    }
    // A cancel of a run with compensations: the handler unwinds first; they run, then it settles.
    if (!this.#compensating && this.#compensable) return new AttemptEnded("stopping");
    const reason = stop?.reason ?? null;
    if (!this.#settleHeld({ state: "cancelled", cancelReason: reason })) {
      return this.end("superseded");
    }
    this.emit({ type: "task:cancelled", runId: this.runId, definition: this.definition, reason });
    return this.end("cancelled");
  }

  /**
   * Holds the run for a pause that reached a boundary: before step `step` runs (or with no step,
   * when the handler is between steps). Nothing after the boundary runs until `resume`.
   */
  holdPaused(step: string | null): AttemptEnded {
    if (this.#ended) return this.#ended;
    if (this.#stopsHere()) return this.settleStopped();
    const { store, now } = this.#deps;
    const held = store.transaction(() => {
      const at = now();
      if (!store.runs.pauseHeld(this.runId, this.generation, at)) return false;
      store.attempts.parked(this.runId, "paused", step, null, at);
      store.log.append(this.runId, "task:paused", { step }, at);
      return true;
    });
    if (!held) return this.end("superseded");
    return this.#paused(step);
  }

  #paused(step: string | null): AttemptEnded {
    this.emit({ type: "task:paused", runId: this.runId, definition: this.definition, step });
    return this.end("paused");
  }

  /** Settles the run as failed; `onError` sees the error. */
  #settleFailed(thrown: unknown): void {
    if (this.#ended) return;
    const record = errorText(thrown);
    if (!this.#settleHeld({ state: "failed", error: record })) {
      this.end("superseded");
      return;
    }
    this.emit({
      type: "task:failed",
      runId: this.runId,
      definition: this.definition,
      error: errorInfo(record),
    });
    this.end("settled");
    const error = thrown instanceof Error ? thrown : rebuildError(record);
    this.#deps.onFailed(error, this.runId, this.definition);
  }

  /** Settles the run the attempt holds. False when another attempt holds the run (nothing was written). */
  #settleHeld(settlement: Settlement): boolean {
    const { store, now } = this.#deps;
    return store.settle(this.runId, this.generation, settlement, now());
  }

  // ── Cancel and the end ──

  /** Asks the attempt to stop: the in-flight step is aborted and the run settles at its next boundary. */
  requestCancel(reason: string | null): void {
    this.#stop = { kind: "cancel", reason };
    this.#watchdog.failAll(
      new DOMException(
        `Run "${this.runId}" was cancelled${reason === null ? "" : `: ${reason}`}.`,
        "AbortError",
      ),
    );
  }

  /**
   * When the run's deadline has passed, stops the attempt as a cancel would (its steps in flight are
   * aborted with a `TimeoutError`), to settle the run failed with `tasks/run-timeout`. Answers
   * whether it has passed. A cancel asked first stays a cancel.
   */
  checkDeadline(): boolean {
    const deadline = this.#deadlineAt;
    if (deadline === null || this.#deps.now() < deadline) return false;
    if (this.#stop === null) {
      this.#stop = { kind: "timeout", error: new RunTimeoutError(this.runId, deadline) };
      this.#watchdog.failAll(
        new DOMException(`Run "${this.runId}" passed its deadline.`, "TimeoutError"),
      );
    }
    return true;
  }

  /**
   * Asks the attempt to hold the run at its next step boundary (`true`), or withdraws a pause not
   * taken yet (`false`). Unlike a cancel, the step in flight is not aborted: it finishes and is
   * journaled first.
   */
  requestPause(pause: boolean): void {
    this.#pause = pause;
  }

  /** Gives the run up without writing: its claim deadline replays it on a healthy isolate. */
  abandon(): AttemptEnded {
    return this.#ended ?? this.end("abandoned");
  }

  /** Ends the attempt once (later calls return the first end): releases it and aborts its steps. */
  end(how: AttemptEnded["how"]): AttemptEnded {
    if (this.#ended) return this.#ended;
    this.#ended = new AttemptEnded(how);
    this.#deps.release(this);
    this.#watchdog.stop();
    this.#watchdog.failAll(new DOMException(`The attempt ended (${how}).`, "AbortError"));
    return this.#ended;
  }
}
