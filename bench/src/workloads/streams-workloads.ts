import type { Workload } from "../workload";
import { streamsAppend } from "./streams-append";
import { streamsAppendCommit } from "./streams-append-commit";
import { streamsReplay } from "./streams-replay";
import { streamsTail } from "./streams-tail";

/** The @durablekit/streams workloads, beside agents/streams from agents@0.32.0. */
export const streamsWorkloads: Workload[] = [
  streamsAppend,
  streamsAppendCommit,
  streamsReplay,
  streamsTail,
];
