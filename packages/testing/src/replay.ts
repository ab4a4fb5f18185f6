import { encode } from "@durablekit/handle-journal";
import {
  replayRecordedRun,
  type TaskChildOutcome,
  type TaskChildSnapshot,
  type TaskDefinitionBase,
  type TaskHandler,
  type TaskStepSnapshot,
} from "@durablekit/tasks";
import { TestingError } from "./errors";
import {
  checkRecording,
  decodeText,
  type TestingRecordedError,
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
   * (a step renamed, inserted or reordered), or recorded a program call its step journal does not
   * hold while recorded calls were ahead: the engine would run it live, and never read the recorded
   * steps.
   */
  | "new-step"
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
       * handler reached where the engine goes live — the step a run recorded in flight runs or waits
       * on, or new ground after every recorded step (steps appended after the last one a run has
       * reached may change freely: a settled run never replays, a run in flight runs them live).
       */
      outcome: "settled" | "frontier";
      /** Recorded steps the handler replayed. */
      replayed: number;
    }
  | { ok: false; divergence: TestingDivergence; replayed: number };

/** A definitions-map entry: a task handler, or a definition with options (its `handler` is replayed). */
export type TestingTaskHandler = TaskHandler | TaskDefinitionBase;

/**
 * Replays a recorded run against a handler — the current code of its definition — on the engine's
 * own replay: the same `ReplayStep` an attempt drives, over a step engine whose journal is the
 * recording (`replayRecordedRun` of `@durablekit/tasks`). It reports the first divergence as the
 * engine would meet it at run time: a step of another kind or event type at a recorded name
 * (`tasks/diverged`), a step name used twice (`tasks/duplicate-step`), a step the recording does
 * not hold while recorded steps remain (a rename, an insertion), a recorded step the handler never
 * reaches, a different result. Nothing runs live and nothing is written: a recorded step answers its
 * recorded result (or rethrows its recorded error), a step callback is never called, a sleep or an
 * event wait answers as recorded, version markers answer their recorded number (one the recording
 * lacks is decided as the engine decides it), `step.journal(name)` is the engine's step journal over
 * the recorded calls (with its refusals: another execution, `tasks/conflict`), child starts answer
 * their recorded runs and `awaitChildren` the recorded children's states, and the replay stops
 * where the engine would go live.
 *
 * @throws TestingError `testing/invalid-argument` for a handler that is not a function or a value
 *   that is not a recording; `testing/unsupported` when the handler reads the result or error of a
 *   child run (a recording holds the children's states, not their results).
 */
export async function replayAgainst(
  definition: TestingTaskHandler,
  recording: TestingRecording,
): Promise<TestingReplayReport> {
  const handler =
    typeof definition === "function"
      ? definition
      : (definition as { handler?: unknown } | null)?.handler;
  if (typeof handler !== "function") {
    throw new TestingError(
      "testing/invalid-argument",
      'replayAgainst(definition, recording): definition must be the handler (or { handler, …options }), e.g. definitions["name@v1"].',
    );
  }
  const checked = checkRecording(recording);
  const steps: TaskStepSnapshot[] = checked.steps.map((recorded) => {
    const step: TaskStepSnapshot = {
      name: recorded.name,
      kind: recorded.kind,
      state: recorded.state,
      attempt: recorded.attempt,
      updatedAt: 0,
    };
    if (recorded.result !== undefined) step.result = decodeText(recorded.result);
    if (recorded.error !== undefined) step.error = { ...recorded.error };
    if (recorded.eventType !== undefined) step.eventType = recorded.eventType;
    if (recorded.wakeAt !== undefined) step.wakeAt = recorded.wakeAt;
    return step;
  });
  const { outcome, replayed, unreached } = await replayRecordedRun(
    handler as TaskHandler,
    decodeText(checked.input),
    {
      runId: checked.runId,
      definition: checked.definition,
      steps,
      journals: checked.journals ?? [],
      children: checked.children ?? [],
    },
    { childOutcome: unreadChild },
  );
  const ahead = unreached[0]?.name ?? null;
  const diverge = (
    kind: TestingDivergenceKind,
    step: string | null,
    code: string | null,
    message: string,
  ): TestingReplayReport => ({
    ok: false,
    replayed,
    divergence: { kind, step, code, message, expected: ahead },
  });
  switch (outcome.kind) {
    case "fatal": {
      const code = (outcome.error as { code?: string }).code ?? null;
      const kind = code === "tasks/duplicate-step" ? "duplicate-step" : "diverged";
      return diverge(kind, outcome.step, code, outcome.error.message);
    }
    case "live":
      if (outcome.recorded || ahead === null) return { ok: true, outcome: "frontier", replayed };
      return diverge(
        "new-step",
        outcome.step,
        null,
        `Step "${outcome.step}" is not in the recorded run, while recorded step "${ahead}" is not reached yet: the engine would run "${outcome.step}" live and never read "${ahead}" (a step renamed, inserted or reordered). Branch the change on step.version(name, latest), or register the new code under a new definition name.`,
      );
    case "failed":
      if (outcome.error instanceof TestingError) throw outcome.error;
      break;
    default:
      break;
  }
  if (ahead !== null) {
    return diverge(
      "unreached",
      ahead,
      null,
      `The handler settled without reaching recorded step "${ahead}" (a step removed, renamed or skipped): a run in flight past it replays other code than recorded it.`,
    );
  }
  const state = checked.state;
  if (state !== "completed" && state !== "failed")
    return { ok: true, outcome: "frontier", replayed };
  const settledOk = outcome.kind === "completed";
  const value = outcome.kind === "completed" ? outcome.value : undefined;
  const error = outcome.kind === "failed" ? outcome.error : undefined;
  const differs =
    state === "completed"
      ? !settledOk || encodeSafe(value) !== checked.result
      : settledOk || !sameError(error, checked.error);
  if (!differs) return { ok: true, outcome: "settled", replayed };
  return diverge(
    "result",
    null,
    null,
    `The recorded run ${state} with ${state === "completed" ? `result ${checked.result}` : `error ${JSON.stringify(checked.error)}`}; the replay ${settledOk ? `completed with ${encodeSafe(value)}` : `failed with ${String((error as Error)?.message ?? error)}`}.`,
  );
}

/**
 * A settled child's outcome as a recording knows it: its state. Its result (or error) lives in the
 * child's object; reading it is refused rather than answered wrong.
 */
function unreadChild(child: TaskChildSnapshot): TaskChildOutcome {
  const runId = child.runId ?? "";
  const refuse = (): never => {
    throw new TestingError(
      "testing/unsupported",
      `replayAgainst: the handler reads the ${child.state === "completed" ? "result" : "error"} of child run "${runId}" (step "${child.step}"); a recording holds its children's states, not their results.`,
    );
  };
  const outcome = { runId, state: child.state } as TaskChildOutcome;
  Object.defineProperty(outcome, child.state === "completed" ? "result" : "error", {
    get: refuse,
    enumerable: true,
  });
  return outcome;
}

function encodeSafe(value: unknown): string {
  try {
    return encode(value);
  } catch (error) {
    // A child's result the recording does not hold was read: refused, not compared.
    if (error instanceof TestingError) throw error;
    if ((error as { cause?: unknown })?.cause instanceof TestingError) throw (error as Error).cause;
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
