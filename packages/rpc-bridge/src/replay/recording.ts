import type { JournalEntry } from "@durablekit/handle-journal";

/**
 * What a replay run needs to be replayed elsewhere, in a test: its program, its input, the seed
 * of its isolate's randomness, when it started (the clock its isolate replays), and the calls its
 * journal holds. `Executor.recording(id)` reads one; `Executor.replayRecording` replays a program
 * against it. Plain JSON: a test can commit it beside itself.
 */
export interface BridgeRecording {
  executionId: string;
  /** The program's source, as the run was started with. */
  source: string;
  /** The run's input, as codec text (`encode` of `@durablekit/handle-journal`). */
  input: string;
  /** The seed of the isolate's randomness (`Math.random`, `crypto.getRandomValues`). */
  seed: string;
  /** When the run started (epoch ms): the clock its isolate replays from. */
  startedAt: number;
  /** The journal's entries, in recorded order. */
  calls: JournalEntry[];
}

/** Options of `Executor.replayRecording`. */
export interface BridgeReplayRecordingOptions {
  /** The program to replay (the code of today); the recorded one when omitted. */
  source?: string;
}
