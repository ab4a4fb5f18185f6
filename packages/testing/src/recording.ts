import { decode, encode } from "@durablekit/handle-journal";
import type {
  TaskChildSnapshot,
  TaskRunHistory,
  TaskRunState,
  TaskStepJournalSnapshot,
  TaskStepSnapshot,
} from "@durablekit/tasks";
import { TestingError } from "./errors";

/** The `format` of a recording file. */
export const TESTING_RECORDING_FORMAT = "durablekit.task-run";
/** The version of the recording format this package writes and reads. */
export const TESTING_RECORDING_VERSION = 1;

/** A step's error in a recording, as the run's snapshot reports it. */
export interface TestingRecordedError {
  name: string;
  message: string;
  code?: string;
}

/** One journaled step of a recorded run. Values are handle-journal codec text. */
export interface TestingRecordedStep {
  name: string;
  kind: TaskStepSnapshot["kind"];
  state: TaskStepSnapshot["state"];
  attempt: number;
  /** Codec text of a completed `do` step's result, an event's payload or a marker's version. */
  result?: string;
  error?: TestingRecordedError;
  eventType?: string;
  /** A waiting step's deadline: a sleep's wake, a retry's time, an event wait's timeout. */
  wakeAt?: number;
}

/**
 * A task run as recorded by {@link recordRun}: plain JSON, to commit beside the tests and replay
 * against later code with {@link replayAgainst}. Values (input, results, payloads) are
 * handle-journal codec text, so Dates, Maps, BigInts and `undefined` come back as they were.
 */
export interface TestingRecording {
  format: typeof TESTING_RECORDING_FORMAT;
  version: typeof TESTING_RECORDING_VERSION;
  definition: string;
  runId: string;
  /** The run's state when it was recorded: a settled run, or one in flight (its frontier). */
  state: TaskRunState;
  /** Codec text of the run's input. */
  input: string;
  /** Codec text of a completed run's result. */
  result?: string;
  /** A failed run's error. */
  error?: TestingRecordedError;
  /** The run's journal in step order. */
  steps: TestingRecordedStep[];
  /**
   * The run's step journals (the calls of programs run inside it, `Tasks.journals(runId)`), when
   * it took any: a replay answers `step.journal(name)` from them.
   */
  journals?: TaskStepJournalSnapshot[];
  /** The child runs it started (`Tasks.children(runId)`), when it started any. */
  children?: TaskChildSnapshot[];
}

/**
 * What `recordRun` reads a run from: a `Tasks` part (its `history(runId)`, and its `journals` and
 * `children` where it has them).
 */
export interface TestingTaskHistorySource {
  history(runId: string): TaskRunHistory | null;
  journals?(runId: string): TaskStepJournalSnapshot[] | null;
  children?(runId: string): TaskChildSnapshot[] | null;
}

/**
 * Records a task run as JSON: its definition, input, state, result and every journaled step with
 * its outcome, the calls of its step journals and the child runs it started, through the `Tasks`
 * part's public `history(runId)`, `journals(runId)` and `children(runId)` (never its tables). Call it inside
 * the object (`runInDurableObject(stub, (o) => recordRun(o.tasks, runId))`); write the result to a
 * file (`JSON.stringify(recording, null, 2)`, e.g. with `toMatchFileSnapshot`) and commit it.
 *
 * @throws TestingError `testing/not-found` when no such run exists; `testing/invalid-argument` for a
 *   malformed run id or a value the codec cannot carry.
 */
export function recordRun(tasks: TestingTaskHistorySource, runId: string): TestingRecording {
  let history: TaskRunHistory | null;
  try {
    history = tasks.history(runId);
  } catch (error) {
    throw new TestingError("testing/invalid-argument", `recordRun: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (history === null) {
    throw new TestingError(
      "testing/not-found",
      `recordRun: no run "${runId}" exists in this object (or it was deleted: record a run started with retain: true).`,
    );
  }
  const { run, input, steps } = history;
  const recording: TestingRecording = {
    format: TESTING_RECORDING_FORMAT,
    version: TESTING_RECORDING_VERSION,
    definition: run.definition,
    runId: run.runId,
    state: run.state,
    input: encodeText(input, "input"),
    steps: steps.map((step) => {
      const out: TestingRecordedStep = {
        name: step.name,
        kind: step.kind,
        state: step.state,
        attempt: step.attempt,
      };
      if ("result" in step) out.result = encodeText(step.result, `step "${step.name}" result`);
      if (step.error) out.error = { ...step.error };
      if (step.eventType !== undefined) out.eventType = step.eventType;
      if (step.state === "waiting" && step.wakeAt !== undefined) out.wakeAt = step.wakeAt;
      return out;
    }),
  };
  const journals = tasks.journals?.(runId) ?? [];
  if (journals.length > 0) recording.journals = journals;
  const children = tasks.children?.(runId) ?? [];
  if (children.length > 0) recording.children = children;
  if (run.state === "completed") recording.result = encodeText(run.result, "result");
  if (run.state === "failed") recording.error = { ...run.error };
  return recording;
}

function encodeText(value: unknown, path: string): string {
  try {
    return encode(value, { path });
  } catch (error) {
    throw new TestingError(
      "testing/invalid-argument",
      `recordRun: cannot record ${path}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/**
 * Checks that a value is a recording this version reads.
 *
 * @throws TestingError `testing/invalid-argument` naming what is wrong.
 */
export function checkRecording(value: unknown): TestingRecording {
  const recording = value as Partial<TestingRecording> | null;
  if (
    typeof recording !== "object" ||
    recording === null ||
    recording.format !== TESTING_RECORDING_FORMAT ||
    recording.version !== TESTING_RECORDING_VERSION ||
    typeof recording.definition !== "string" ||
    typeof recording.input !== "string" ||
    !Array.isArray(recording.steps)
  ) {
    throw new TestingError(
      "testing/invalid-argument",
      `Not a recording this @durablekit/testing reads (format "${TESTING_RECORDING_FORMAT}" version ${TESTING_RECORDING_VERSION}); record the run again with recordRun.`,
    );
  }
  return recording as TestingRecording;
}

/** Decodes a recorded codec text. */
export function decodeText(text: string | undefined): unknown {
  return text === undefined ? undefined : decode(text);
}
