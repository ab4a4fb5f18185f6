import { settleCancelled } from "./attempt-outcomes";
import { DuplicateStepError, ReplayDivergedError, TasksError } from "./errors";
import type { TaskEvent } from "./events";
import type { Journal, JournalRow } from "./journal";
import { JournalWriter, stepRow } from "./journal-writer";
import { validateName } from "./names";
import type { StepPolicy } from "./policy";
import type { StepKind } from "./rows";
import { AttemptEnded } from "./signals";
import type { TaskStore } from "./store";
import { encodeValue, errorText, rebuildError } from "./values";
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
 * One claimed execution of a run's handler: its state (open, fatal, cancel requested, ended) and
 * the bookkeeping of its step boundaries. Parks and settles are in `attempt-outcomes.ts`. All
 * writes are fenced on the attempt's generation: once another attempt holds the run, this one ends
 * as `superseded` without writing anything more. Journal writes go through its {@link JournalWriter}.
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
  /** Whether the records of the run are kept when it completes. */
  readonly retain: boolean;
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
    this.retain = init.retain;
    this.#live = init.startsLive;
    this.writer = new JournalWriter(
      deps.store,
      init.runId,
      init.generation,
      () => this.end("superseded"),
      (name) => init.journal.has(name),
    );
  }

  get ended(): AttemptEnded | null {
    return this.#ended;
  }

  get cancelRequested(): boolean {
    return this.#cancel !== null;
  }

  /** The reason given with the requested cancel, or null. */
  get cancelReason(): string | null {
    return this.#cancel?.reason ?? null;
  }

  /** The error that fails the run whatever the handler does next (a duplicate, a divergence). */
  get fatal(): Error | null {
    return this.#fatal;
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
    if (this.#cancel) throw settleCancelled(this);
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
    if (!this.writer.write(rows, () => this.deps.store.events.deleteEvent(this.runId, eventSeq))) {
      throw this.#ended;
    }
  }

  /** Publishes a status message when live; replayed ground stays silent. */
  writeStatus(message: string): void {
    if (!this.#live || this.#ended || message === this.#lastStatus) return;
    if (this.deps.store.runs.writeStatus(this.runId, this.generation, message, Date.now())) {
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

  /** Gives the run up without writing: its claim deadline replays it on a healthy isolate. */
  abandon(): AttemptEnded {
    return this.#ended ?? this.end("abandoned");
  }

  /** Ends the attempt once (later calls return the first end): releases it and aborts its steps. */
  end(how: AttemptEnded["how"]): AttemptEnded {
    if (this.#ended) return this.#ended;
    this.#ended = new AttemptEnded(how);
    this.writer.pending.length = 0;
    this.deps.release(this);
    this.watchdog.stop();
    this.watchdog.failAll(new DOMException(`The attempt ended (${how}).`, "AbortError"));
    return this.#ended;
  }
}
