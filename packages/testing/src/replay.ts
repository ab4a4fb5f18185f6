import { encode } from "@durablekit/handle-journal";
import {
  DuplicateStepError,
  ReplayDivergedError,
  type TaskAwaitChildrenOptions,
  type TaskChildOutcome,
  type TaskChildRun,
  type TaskChildSpec,
  type TaskChildTarget,
  type TaskInterruptedStep,
  type TaskStep,
  type TaskStepAttemptContext,
  type TaskStepJournal,
  type TaskStepOptions,
  type TaskWaitForEventOptions,
} from "@durablekit/tasks";
import { TestingError } from "./errors";
import {
  checkRecording,
  decodeText,
  type TestingRecordedError,
  type TestingRecordedStep,
  type TestingRecording,
} from "./recording";

/** How a replay diverged from its recording. */
export type TestingDivergenceKind =
  /** The journal holds another kind of step (or event type) at the name: the engine fails the run (`tasks/diverged`). */
  | "diverged"
  /** The handler used a step name twice: the engine fails the run (`tasks/duplicate-step`). */
  | "duplicate-step"
  /**
   * The handler reached a step the recording does not hold while recorded steps were still ahead
   * (a step renamed, inserted or reordered): the engine would run it live, and never read the
   * recorded steps.
   */
  | "new-step"
  /** The recorded run settled, but the handler goes on to a step it never ran: the engine would run it live. */
  | "beyond-end"
  /** The handler settled without reaching a recorded step (a step removed or skipped). */
  | "unreached"
  /** The handler settled with another result (or error) than the recorded run. */
  | "result";

/** The first place a replay left its recording. */
export interface TestingDivergence {
  kind: TestingDivergenceKind;
  /** The step where it happened (`null` for a different result). */
  step: string | null;
  /** The engine's code for it, when the engine fails the run there: `tasks/diverged`, `tasks/duplicate-step`. */
  code: string | null;
  /** What happened and what to do, in the engine's words where it has them. */
  message: string;
  /** The recorded step the handler should have reached next, when there is one. */
  expected: string | null;
}

/** The report of {@link replayAgainst}: a clean replay, or the first divergence. */
export type TestingReplayReport =
  | {
      ok: true;
      /**
       * `settled`: the handler replayed the whole recording and settled as it did; `frontier`: the
       * recorded run was in flight and the handler reached its frontier (the step it waits on, or
       * new ground after every recorded step) — where the engine goes live.
       */
      outcome: "settled" | "frontier";
      /** Recorded steps the handler replayed. */
      replayed: number;
    }
  | { ok: false; divergence: TestingDivergence; replayed: number };

/** A task handler, as a definitions map holds it. */
export type TestingTaskHandler = (input: never, step: TaskStep) => unknown;

const VERSION = "version";

/** Unwinds the handler once the replay has its answer; the first answer wins. */
class ReplayStopped extends Error {
  constructor() {
    super("The replay has its answer; the handler stops here.");
    this.name = "ReplayStopped";
  }
}

type Stop = { ok: true; outcome: "frontier" } | { ok: false; divergence: TestingDivergence };

/**
 * Replays a recorded run against a handler — the current code of its definition — and reports the
 * first divergence, as the engine would meet it at run time: a step of another kind or event type
 * at a recorded name (`tasks/diverged`), a step name used twice (`tasks/duplicate-step`), a step
 * the recording does not hold while recorded steps remain (a rename, an insertion), a recorded
 * step the handler never reaches, a different result. Nothing runs live: a recorded step answers
 * its recorded result (or rethrows its recorded error), a step callback is never called, a sleep
 * or an event wait answers as recorded, and the replay stops at the recorded run's frontier.
 * Version markers (`step.version`) answer their recorded number, and a marker the recording lacks
 * is decided as the engine decides it (`0` while recorded steps are ahead, else `latest`).
 *
 * @throws TestingError `testing/invalid-argument` for a handler that is not a function or a value
 *   that is not a recording; `testing/unsupported` when the handler takes a step journal
 *   (`step.journal`: recordings of bridge executions are not supported yet).
 */
export async function replayAgainst(
  definition: TestingTaskHandler,
  recording: TestingRecording,
): Promise<TestingReplayReport> {
  if (typeof definition !== "function") {
    throw new TestingError(
      "testing/invalid-argument",
      'replayAgainst(definition, recording): definition must be the handler, e.g. definitions["name@v1"].',
    );
  }
  const checked = checkRecording(recording);
  const step = new RecordedStep(checked);
  let settled: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    settled = { ok: true, value: await definition(decodeText(checked.input) as never, step) };
  } catch (error) {
    settled = { ok: false, error };
  }
  return step.finish(settled);
}

/** The `TaskStep` of a replay against a recording: the engine's replay rules, with nothing live. */
class RecordedStep implements TaskStep {
  readonly runId: string;
  readonly attempt: number;
  readonly interrupted: TaskInterruptedStep | null = null;
  readonly #recording: TestingRecording;
  /** Recorded steps by name (markers under their own namespace). */
  readonly #steps = new Map<string, TestingRecordedStep>();
  readonly #markers = new Map<string, TestingRecordedStep>();
  readonly #entered = new Set<string>();
  #enteredRecorded = 0;
  #stop: Stop | null = null;

  constructor(recording: TestingRecording) {
    this.#recording = recording;
    this.runId = recording.runId;
    this.attempt = Math.max(1, ...recording.steps.map((s) => s.attempt)) + 1;
    for (const recorded of recording.steps) {
      if (recorded.kind === VERSION) this.#markers.set(recorded.name, recorded);
      else this.#steps.set(recorded.name, recorded);
    }
  }

  get #size(): number {
    return this.#recording.steps.length;
  }

  /** The first recorded step (in step order) the handler has not entered. */
  #nextRecorded(): TestingRecordedStep | null {
    for (const recorded of this.#recording.steps) {
      const key = recorded.kind === VERSION ? `${VERSION}:${recorded.name}` : recorded.name;
      if (!this.#entered.has(key)) return recorded;
    }
    return null;
  }

  #halt(stop: Stop): never {
    this.#stop ??= stop;
    throw new ReplayStopped();
  }

  #diverge(kind: TestingDivergenceKind, step: string | null, error: Error | string): never {
    const message = typeof error === "string" ? error : error.message;
    const code = typeof error === "string" ? null : ((error as { code?: string }).code ?? null);
    const expected = this.#nextRecorded();
    this.#halt({
      ok: false,
      divergence: { kind, step, code, message, expected: expected?.name ?? null },
    });
  }

  /** The engine's `enter`: the attempt is open, the name is unused. */
  #enter(key: string, shown: string): void {
    if (this.#stop) throw new ReplayStopped();
    if (this.#entered.has(key)) {
      this.#diverge("duplicate-step", shown, new DuplicateStepError(shown));
    }
    this.#entered.add(key);
  }

  /** The step is not recorded: new ground, where the engine goes live. */
  #newGround(name: string): never {
    const ahead = this.#nextRecorded();
    if (ahead) {
      this.#diverge(
        "new-step",
        name,
        `Step "${name}" is not in the recorded run, while recorded step "${ahead.name}" is not reached yet: the engine would run "${name}" live and never read "${ahead.name}" (a step renamed, inserted or reordered). Branch the change on step.version(name, latest), or register the new code under a new definition name.`,
      );
    }
    const state = this.#recording.state;
    if (state === "completed" || state === "failed" || state === "cancelled") {
      this.#diverge(
        "beyond-end",
        name,
        `The recorded run ${state} without step "${name}": the engine would run it live on a replay of that run. Branch the change on step.version(name, latest).`,
      );
    }
    this.#halt({ ok: true, outcome: "frontier" });
  }

  #recorded(name: string, kind: "do" | "sleep" | "event", eventType?: string): TestingRecordedStep {
    this.#enter(name, name);
    const recorded = this.#steps.get(name);
    if (!recorded) this.#newGround(name);
    this.#enteredRecorded++;
    if (recorded.kind !== kind) {
      this.#diverge(
        "diverged",
        name,
        new ReplayDivergedError(name, `journaled as a ${recorded.kind} step, replayed as ${kind}`),
      );
    }
    if (eventType !== undefined && recorded.eventType !== eventType) {
      this.#diverge(
        "diverged",
        name,
        new ReplayDivergedError(
          name,
          `journaled waiting for "${recorded.eventType}", replayed waiting for "${eventType}"`,
        ),
      );
    }
    return recorded;
  }

  do<T>(name: string, fn: (context: TaskStepAttemptContext) => T | Promise<T>): Promise<Awaited<T>>;
  do<T>(
    name: string,
    options: TaskStepOptions,
    fn: (context: TaskStepAttemptContext) => T | Promise<T>,
  ): Promise<Awaited<T>>;
  async do<T>(name: string): Promise<Awaited<T>> {
    const recorded = this.#recorded(name, "do");
    if (recorded.state === "completed") return decodeText(recorded.result) as Awaited<T>;
    if (recorded.state === "failed") throw rebuild(recorded.error);
    // Running or waiting for its retry: the engine runs it (again) here.
    this.#halt({ ok: true, outcome: "frontier" });
  }

  async sleep(name: string): Promise<void> {
    const recorded = this.#recorded(name, "sleep");
    if (recorded.state !== "completed") this.#halt({ ok: true, outcome: "frontier" });
  }

  async sleepUntil(name: string): Promise<void> {
    return this.sleep(name);
  }

  async waitForEvent<T = unknown>(name: string, options: TaskWaitForEventOptions): Promise<T> {
    const recorded = this.#recorded(name, "event", options?.type);
    if (recorded.state === "completed") return decodeText(recorded.result) as T;
    if (recorded.state === "failed") throw rebuild(recorded.error);
    this.#halt({ ok: true, outcome: "frontier" });
  }

  async version(name: string, latest: number): Promise<number> {
    this.#enter(`${VERSION}:${name}`, name);
    const recorded = this.#markers.get(name);
    if (recorded) {
      this.#enteredRecorded++;
      return decodeText(recorded.result) as number;
    }
    // As the engine: recorded ground still ahead means the run predates the marker.
    return this.#enteredRecorded < this.#size ? 0 : latest;
  }

  /** A child start is a `do` step: answered from the recording, never sent. */
  startChild(
    name: string,
    _target: TaskChildTarget,
    _definition: string,
    _input?: unknown,
    options?: TaskStepOptions,
  ): Promise<TaskChildRun> {
    const unsent = (): TaskChildRun => {
      throw new TestingError("testing/unsupported", `Child run "${name}" is not recorded.`);
    };
    return options === undefined ? this.do(name, unsent) : this.do(name, options, unsent);
  }

  /** Many child starts are one `do` step: answered from the recording, never sent. */
  startChildren(
    name: string,
    _children: readonly TaskChildSpec[],
    options?: TaskStepOptions,
  ): Promise<TaskChildRun[]> {
    const unsent = (): TaskChildRun[] => {
      throw new TestingError("testing/unsupported", `Child runs "${name}" are not recorded.`);
    };
    return options === undefined ? this.do(name, unsent) : this.do(name, options, unsent);
  }

  awaitChildren(
    name: string,
    _runs: TaskChildRun | readonly TaskChildRun[],
    _options?: TaskAwaitChildrenOptions,
  ): Promise<TaskChildOutcome[]> {
    throw new TestingError(
      "testing/unsupported",
      `replayAgainst: the handler awaits child runs at "${name}"; their outcomes live in the parent object's tables, which a recording does not hold.`,
    );
  }

  journal(name: string): TaskStepJournal {
    throw new TestingError(
      "testing/unsupported",
      `replayAgainst: the handler takes step journal "${name}"; recordings of programs run inside a task (step.journal) are not supported yet.`,
    );
  }

  async status(): Promise<void> {}

  idempotencyKey(name: string): string {
    return `${this.runId}:${name}`;
  }

  /** The report, once the handler has returned or thrown. */
  finish(
    settled: { ok: true; value: unknown } | { ok: false; error: unknown },
  ): TestingReplayReport {
    const replayed = this.#enteredRecorded;
    const stop = this.#stop;
    if (stop)
      return stop.ok ? { ok: true, outcome: stop.outcome, replayed } : { ...stop, replayed };
    if (!settled.ok && settled.error instanceof TestingError) throw settled.error;
    const ahead = this.#nextRecorded();
    if (ahead) {
      return {
        ok: false,
        replayed,
        divergence: {
          kind: "unreached",
          step: ahead.name,
          code: null,
          message: `The handler settled without reaching recorded step "${ahead.name}" (a step removed, renamed or skipped): a run in flight past it replays other code than recorded it.`,
          expected: ahead.name,
        },
      };
    }
    const recording = this.#recording;
    if (recording.state === "completed" || recording.state === "failed") {
      const differs =
        recording.state === "completed"
          ? !settled.ok || encodeSafe(settled.value) !== recording.result
          : settled.ok || !sameError(settled.error, recording.error);
      if (differs) {
        return {
          ok: false,
          replayed,
          divergence: {
            kind: "result",
            step: null,
            code: null,
            message: `The recorded run ${recording.state} with ${recording.state === "completed" ? `result ${recording.result}` : `error ${JSON.stringify(recording.error)}`}; the replay ${settled.ok ? `completed with ${encodeSafe(settled.value)}` : `failed with ${String((settled.error as Error)?.message ?? settled.error)}`}.`,
            expected: null,
          },
        };
      }
      return { ok: true, outcome: "settled", replayed };
    }
    return { ok: true, outcome: "frontier", replayed };
  }
}

function encodeSafe(value: unknown): string {
  try {
    return encode(value);
  } catch (error) {
    return `<unserializable: ${(error as Error).message}>`;
  }
}

function sameError(thrown: unknown, recorded: TestingRecordedError | undefined): boolean {
  const error = thrown as { name?: unknown; message?: unknown; code?: unknown } | null;
  return (
    recorded !== undefined &&
    error !== null &&
    typeof error === "object" &&
    error.message === recorded.message &&
    (error.code ?? undefined) === recorded.code
  );
}

/** A recorded step error, rebuilt as the engine rebuilds it (name, message, code). */
function rebuild(recorded: TestingRecordedError | undefined): Error {
  const error = new Error(recorded?.message ?? "The recorded step failed.");
  error.name = recorded?.name ?? "Error";
  if (recorded?.code !== undefined) Object.assign(error, { code: recorded.code });
  return error;
}
