import { checkName } from "./arguments";
import { AttemptEnded, isAttemptEnded } from "./attempt/signals";
import type { Flight } from "./attempt/watchdog";
import type { ChildSteps, TaskChildSpec } from "./children/child-steps";
import type { ObjectAddress } from "./children/protocol";
import type { TaskChildOutcome, TaskChildRun, TaskChildSnapshot } from "./children/types";
import { DEFAULT_STEP_POLICY, type StepPolicy } from "./policy";
import { StepBoundaries } from "./steps/boundaries";
import { Journal } from "./steps/journal";
import { ReplayStep } from "./steps/step";
import type { StepEngine } from "./steps/step-engine";
import { StepJournal } from "./steps/step-journal";
import type { CallStore } from "./store/call-store";
import {
  type CallRow,
  COMPENSATION_PREFIX,
  type EventRow,
  type StepRow,
  type TaskStepKind,
  VERSION_MARKER_PREFIX,
} from "./store/rows";
import type { TaskStep, TaskStepJournal, TaskStepJournalSnapshot, TaskStepSnapshot } from "./types";
import { DEFAULT_MAX_VALUE_BYTES, encodeValue, rebuildError } from "./values";

/** A run's recorded history, as `Tasks.history`, `journals` and `children` read it. */
export interface TaskRecordedRun {
  runId: string;
  definition: string;
  /** The run's journal in step order (`Tasks.steps(runId)`, version markers included). */
  steps: readonly TaskStepSnapshot[];
  /** The run's step journals (`Tasks.journals(runId)`); none when omitted. */
  journals?: readonly TaskStepJournalSnapshot[];
  /** The child runs it started (`Tasks.children(runId)`); none when omitted. */
  children?: readonly TaskChildSnapshot[];
}

/** Options of {@link replayRecordedRun}. */
export interface TaskReplayOptions {
  /** The `maxStepsPerRun` the run's object is constructed with (10,000). */
  maxStepsPerRun?: number;
  /** The `maxValueBytes` the run's object is constructed with (1 MiB). */
  maxValueBytes?: number;
  /**
   * The outcome `awaitChildren` reports for a settled child: a recording knows its state, not its
   * result (that lives in the child's object). Default: the state, with no result or error.
   */
  childOutcome?: (child: TaskChildSnapshot) => TaskChildOutcome;
}

/** Where a replay of a recorded run ended. */
export type TaskReplayOutcome =
  /** The handler returned: the engine would complete the run with this value. */
  | { kind: "completed"; value: unknown }
  /** The handler threw: the engine would fail the run with this error. */
  | { kind: "failed"; error: unknown }
  /** The engine fails the run whatever the handler does next: `tasks/diverged`, `tasks/duplicate-step`, `tasks/step-limit`. */
  | { kind: "fatal"; error: Error; step: string }
  /**
   * The engine goes live at `step`: a step not in the journal (new ground), or a recorded step not
   * settled (running, waiting for its retry, a sleep or an event) that it runs or parks on.
   */
  | { kind: "live"; step: string; recorded: boolean };

/** What {@link replayRecordedRun} found. */
export interface TaskReplayResult {
  outcome: TaskReplayOutcome;
  /** Recorded steps the handler reached (version markers included). */
  replayed: number;
  /**
   * Recorded steps (as `steps()` names and kinds them) the handler did not reach, in step order;
   * compensations (run by the engine after the handler) are never listed.
   */
  unreached: Array<Pick<TaskStepSnapshot, "name" | "kind">>;
}

/**
 * Replays a recorded run against a handler exactly as an attempt of the engine would — the same
 * {@link ReplayStep}, over a {@link StepEngine} whose journal is the recording — and stops where the
 * engine would go live: nothing runs, nothing is written. A journal hit answers its recorded value
 * (or rethrows its recorded error), a name used twice or a step of another kind at a recorded name
 * fails as the engine fails the run, a version marker the recording lacks is decided as the engine
 * decides it, `step.journal(name)` is the engine's own step journal over the recorded calls (a
 * call recorded live ends the replay there), and `startChild`/`awaitChildren` answer from the
 * recorded steps and children.
 *
 * For tools that prove a deploy against recorded runs (`replayAgainst` of `@durablekit/testing`).
 */
export async function replayRecordedRun(
  handler: (input: never, step: TaskStep) => unknown,
  input: unknown,
  recorded: TaskRecordedRun,
  options: TaskReplayOptions = {},
): Promise<TaskReplayResult> {
  const engine = new RecordedEngine(recorded, options);
  const step = new ReplayStep(engine, null);
  let settled: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    settled = { ok: true, value: await handler(input as never, step) };
  } catch (error) {
    settled = { ok: false, error };
  }
  return engine.result(settled);
}

/** A stored step name: a version marker under its reserved prefix. */
function storedName(step: Pick<TaskStepSnapshot, "name" | "kind">): string {
  if (step.kind === "version") return VERSION_MARKER_PREFIX + step.name;
  return step.kind === "compensation" ? COMPENSATION_PREFIX + step.name : step.name;
}

/** The journal row of a recorded step, its value as codec text (an error as its record). */
function rowOf(step: TaskStepSnapshot, seq: number, maxValueBytes: number): StepRow {
  const kind: TaskStepKind =
    step.kind === "version" || step.kind === "compensation" ? "do" : step.kind;
  let value: string | null = null;
  if (step.error !== undefined) value = JSON.stringify({ $error: { ...step.error } });
  else if ("result" in step) value = encodeValue(step.result, maxValueBytes, `step "${step.name}"`);
  return {
    name: storedName(step),
    seq,
    kind,
    state: step.state,
    attempt: step.attempt,
    value,
    // A waiting row whose deadline was not recorded is not due: the replay parks there.
    wake_at: step.wakeAt ?? (step.state === "waiting" ? Number.MAX_SAFE_INTEGER : null),
    event_type: step.eventType ?? null,
    next_step: null,
    at: 0,
  };
}

/**
 * The {@link StepEngine} of a replay against a recording: the `Attempt`'s boundary rules (enter,
 * replaying, expect, the step limit) over the recorded journal, and no writes — where the engine
 * would go live (run a step, park) the attempt ends instead, naming the step.
 */
class RecordedEngine implements StepEngine {
  readonly runId: string;
  readonly definition: string;
  readonly generation = "replay";
  readonly number: number;
  readonly boundaries: StepBoundaries;
  readonly defaults: StepPolicy = DEFAULT_STEP_POLICY;
  readonly listening = false;
  readonly #recorded: TaskRecordedRun;
  readonly #maxValueBytes: number;
  readonly #childOutcome: (child: TaskChildSnapshot) => TaskChildOutcome;
  #ended: AttemptEnded | null = null;
  #live: { step: string; recorded: boolean } | null = null;
  readonly #stepJournals = new Map<string, StepJournal>();

  constructor(recorded: TaskRecordedRun, options: TaskReplayOptions) {
    this.#recorded = recorded;
    this.runId = recorded.runId;
    this.definition = recorded.definition;
    this.number = Math.max(0, ...recorded.steps.map((s) => s.attempt)) + 1;
    this.#maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
    this.#childOutcome =
      options.childOutcome ??
      ((child) => ({ runId: child.runId ?? "", state: child.state }) as TaskChildOutcome);
    const calls: CallRow[] = (recorded.journals ?? []).flatMap((journal) =>
      journal.entries.map((entry) => ({
        journal: journal.name,
        key: entry.key,
        seq: entry.seq,
        executionId: entry.executionId,
        module: entry.module,
        method: entry.method,
        argsDigest: entry.argsDigest,
        outcome: entry.outcome,
        payload: entry.payload,
        at: entry.recordedAt,
      })),
    );
    const journal = new Journal({
      packed: [],
      rows: recorded.steps.map((step, i) => rowOf(step, i + 1, this.#maxValueBytes)),
      calls,
    });
    this.boundaries = new StepBoundaries(journal, recorded.runId, options.maxStepsPerRun ?? 10_000);
  }

  get ended(): AttemptEnded | null {
    return this.#ended;
  }

  /** A replay has no clock: nothing recorded falls due, every wait parks where it was. */
  now(): number {
    return 0;
  }

  emit(): void {}

  // ── Boundaries (as `Attempt`) ──

  enter(name: string, internal = false): void {
    if (this.#ended) throw this.#ended;
    this.boundaries.enter(name, internal);
  }

  /** The frontier: the engine runs or parks from here; the replay ends. */
  goLive(): void {
    const step = this.boundaries.last;
    this.#live ??= { step, recorded: this.boundaries.journal.has(step) };
    throw this.end("parked");
  }

  // ── Writes: only a version marker decided on new ground reaches one ──

  record(_row: StepRow, extra?: () => void): boolean {
    extra?.();
    return this.#ended === null;
  }

  markInFlight(): boolean {
    return false;
  }

  track(_flight: Flight): () => void {
    return () => {};
  }

  encode(value: unknown, path: string): string {
    return encodeValue(value, this.#maxValueBytes, path);
  }

  stepFailed(): AttemptEnded {
    return this.end("parked");
  }

  journaledFailure(record: string | null): Error {
    return rebuildError(record);
  }

  parkAgain(): AttemptEnded {
    return this.end("parked");
  }

  parkNew(): AttemptEnded {
    return this.end("parked");
  }

  peekEvent(): EventRow | undefined {
    return undefined;
  }

  consumeEvent(): void {}

  noteCompensable(): void {}

  registerCompensation(): void {}

  failStep(_name: string, _seq: number, _kind: TaskStepKind, error: Error): Error {
    return error;
  }

  // ── Step journals: the engine's, over the recorded calls ──

  stepJournal(name: string): TaskStepJournal {
    if (this.#ended) throw this.#ended;
    checkName(name, "A step journal name");
    let journal = this.#stepJournals.get(name);
    if (journal === undefined) {
      journal = new StepJournal(
        this,
        this.#liveCalls(name),
        this.#maxValueBytes,
        name,
        this.boundaries.journal.calls(name),
      );
      this.#stepJournals.set(name, journal);
    }
    return journal;
  }

  /**
   * The call rows a step journal would write: a call recorded (or resolved) during a replay is one
   * the recording does not hold — the program went live — so the replay ends there.
   */
  #liveCalls(name: string): CallStore {
    const live = (): never => {
      this.#live ??= { step: `journal:${name}`, recorded: false };
      throw this.end("parked");
    };
    return {
      insertFenced: live,
      resolveFenced: live,
      deleteJournalFenced: live,
    } as unknown as CallStore;
  }

  // ── Child runs: answered from the recorded steps and children ──

  children(): ChildSteps {
    const recorded = this.#recorded.children ?? [];
    const byRun = new Map(recorded.map((child) => [child.runId, child]));
    const settled = (run: TaskChildRun): boolean => {
      const state = byRun.get(run.runId)?.state;
      return state === "completed" || state === "failed" || state === "cancelled";
    };
    return {
      address: (target) => target as unknown as ObjectAddress,
      start: (_run, _step: string, _specs: readonly TaskChildSpec[]) => {
        throw this.end("parked");
      },
      checkAwaitable: () => {},
      settledPositions: (_runId, runs) => runs.flatMap((run, i) => (settled(run) ? [i] : [])),
      outcomes: (_runId, runs, positions) => {
        const at = positions === null ? null : new Set(positions);
        return runs.map((run, i) => {
          const child = byRun.get(run.runId);
          if (child === undefined || !settled(run) || (at !== null && !at.has(i))) {
            return { runId: run.runId, state: "running" };
          }
          return this.#childOutcome(child);
        });
      },
      registerWait: () => {},
      clearWait: () => {},
    };
  }

  writeStatus(): void {}

  end(how: AttemptEnded["how"]): AttemptEnded {
    this.#ended ??= new AttemptEnded(how);
    return this.#ended;
  }

  // ── The result ──

  result(settled: { ok: true; value: unknown } | { ok: false; error: unknown }): TaskReplayResult {
    const { fatal, last } = this.boundaries;
    let outcome: TaskReplayOutcome;
    if (this.#live) outcome = { kind: "live", ...this.#live };
    else if (fatal) {
      const step = last.startsWith(VERSION_MARKER_PREFIX)
        ? last.slice(VERSION_MARKER_PREFIX.length)
        : last;
      outcome = { kind: "fatal", error: fatal, step };
    } else if (!settled.ok && isAttemptEnded(settled.error)) {
      outcome = { kind: "live", step: last, recorded: false };
    } else if (settled.ok) outcome = { kind: "completed", value: settled.value };
    else outcome = { kind: "failed", error: settled.error };
    // A compensation is the engine's, run after the handler: no handler reaches it.
    const unreached = this.#recorded.steps
      .filter((step) => step.kind !== "compensation")
      .filter((step) => !this.boundaries.entered(storedName(step)))
      .map(({ name, kind }) => ({ name, kind }));
    return { outcome, replayed: this.boundaries.replayed, unreached };
  }
}
