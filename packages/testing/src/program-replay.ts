import { decode, encode } from "@durablekit/handle-journal";
import type { BridgeExecutionState, BridgeRecording } from "@durablekit/rpc-bridge";
import { TestingError } from "./errors";

/** The `format` of a program recording file. */
export const TESTING_PROGRAM_RECORDING_FORMAT = "durablekit.program-run";

/** How a recorded program run had ended when it was recorded. */
export interface TestingProgramEnd {
  state: BridgeExecutionState;
  /** Codec text of a completed run's result. */
  result?: string;
  /** A failed run's error code and message. */
  error?: { code?: string; message: string };
}

/**
 * A replay run of `@durablekit/rpc-bridge` as recorded by {@link recordProgram}: plain JSON, to
 * commit beside the tests and replay against later program code with {@link replayProgram}.
 * `input` and `end.result` are handle-journal codec text.
 */
export interface TestingProgramRecording extends BridgeRecording {
  format: typeof TESTING_PROGRAM_RECORDING_FORMAT;
  version: 1;
  end: TestingProgramEnd;
}

/** What {@link recordProgram} and {@link replayProgram} need of an `Executor` (its public methods). */
export interface TestingProgramExecutor {
  recording(executionId: string): BridgeRecording | null;
  get(executionId: string): {
    state: TestingProgramEnd["state"];
    result?: unknown;
    error?: { code?: unknown; message: string };
  } | null;
  replayRecording(
    recording: BridgeRecording,
    options?: { source?: string },
  ): Promise<{ state: string; result?: unknown; error?: { code?: unknown; message: string } }>;
}

/** Options of {@link replayProgram}. */
export interface TestingProgramReplayOptions {
  /** The program of today to replay; the recorded source when omitted. */
  source?: string;
}

/** The report of {@link replayProgram}: a clean replay, or the first divergence. */
export type TestingProgramReplayReport =
  | {
      ok: true;
      /**
       * `settled`: the program made every recorded call, in order, and ended as the recorded run
       * did; `frontier`: it made every recorded call and then one more (new ground: a run in flight
       * makes it live, and it may change freely); `interrupted`: it reached the recorded
       * `ctx.interrupt()` nobody had resumed.
       */
      outcome: "settled" | "frontier" | "interrupted";
    }
  | {
      ok: false;
      /**
       * `diverged`: a call other than the recorded one at a recorded key, or recorded calls the
       * program no longer makes (`bridge/diverged`, the error the executor fails the run with);
       * `result`: the same calls, another result or error.
       */
      kind: "diverged" | "result";
      code: string | null;
      message: string;
    };

/**
 * Records a replay run (`onInterrupt: "replay"`) of an `Executor` for {@link replayProgram}: its
 * program, input, seed, start time, journal and how it had ended. Run it inside the object
 * (`runInDurableObject`).
 * @throws TestingError `testing/not-found` when the executor has no replay run with that id.
 */
export function recordProgram(
  executor: TestingProgramExecutor,
  executionId: string,
): TestingProgramRecording {
  const recorded = executor.recording(executionId);
  const record = executor.get(executionId);
  if (recorded === null || record === null) {
    throw new TestingError(
      "testing/not-found",
      `No replay run "${executionId}" in this executor (only onInterrupt: "replay" runs have a journal to record).`,
    );
  }
  const end: TestingProgramEnd = { state: record.state };
  if (record.state === "completed") end.result = encode(record.result);
  if (record.error !== undefined) {
    end.error = {
      message: record.error.message,
      ...(typeof record.error.code === "string" ? { code: record.error.code } : {}),
    };
  }
  return {
    format: TESTING_PROGRAM_RECORDING_FORMAT,
    version: 1,
    executionId: recorded.executionId,
    source: recorded.source,
    input: recorded.input,
    seed: recorded.seed,
    startedAt: recorded.startedAt,
    calls: recorded.calls,
    end,
  };
}

/**
 * Replays a recorded program run against the program of today, on the executor's own replay
 * (`Executor.replayRecording`): every recorded call is answered from the recording, no host
 * function runs and nothing is written; the isolate replays the recorded randomness and clock.
 * Reports the first divergence the executor meets (a changed or missing call), or a different
 * end. Run it inside an object whose executor has the same modules (`runInDurableObject`).
 * @throws TestingError `testing/invalid-argument` for something that is not a program recording.
 */
export async function replayProgram(
  executor: TestingProgramExecutor,
  recording: TestingProgramRecording,
  options: TestingProgramReplayOptions = {},
): Promise<TestingProgramReplayReport> {
  if (
    typeof recording !== "object" ||
    recording === null ||
    recording.format !== TESTING_PROGRAM_RECORDING_FORMAT ||
    recording.version !== 1
  ) {
    throw new TestingError(
      "testing/invalid-argument",
      `replayProgram takes a recording made by recordProgram (format "${TESTING_PROGRAM_RECORDING_FORMAT}", version 1).`,
    );
  }
  const { format: _format, version: _version, end, ...recorded } = recording;
  const replayed = await executor.replayRecording(
    recorded,
    options.source === undefined ? {} : { source: options.source },
  );
  const code = typeof replayed.error?.code === "string" ? replayed.error.code : null;
  if (replayed.state === "failed" && code === "bridge/frontier")
    return { ok: true, outcome: "frontier" };
  if (replayed.state === "failed" && code === "bridge/diverged") {
    return { ok: false, kind: "diverged", code, message: replayed.error?.message ?? "" };
  }
  if (replayed.state === "interrupted") return { ok: true, outcome: "interrupted" };
  const same =
    replayed.state === end.state &&
    (end.state !== "completed" || encode(replayed.result) === (end.result ?? encode(undefined))) &&
    (end.state !== "failed" || (code ?? undefined) === end.error?.code);
  if (same) return { ok: true, outcome: "settled" };
  const was =
    end.state === "completed"
      ? `returned ${JSON.stringify(decode(end.result ?? encode(undefined)))}`
      : `ended ${end.state}${end.error ? ` (${end.error.code ?? end.error.message})` : ""}`;
  const now =
    replayed.state === "completed"
      ? `returns ${JSON.stringify(replayed.result)}`
      : `ends ${replayed.state}${code ? ` (${code})` : replayed.error ? ` (${replayed.error.message})` : ""}`;
  return {
    ok: false,
    kind: "result",
    code,
    message: `The program made the recorded calls but the recorded run ${was}, and the program now ${now}.`,
  };
}
