import type { Workload } from "../workload";
import { journalCodecJson, journalCodecSuperjson } from "./journal-codec";
import { journalRecord } from "./journal-record";
import { journalReplay } from "./journal-replay";

/** The handle-journal workloads, in the order they print. */
export const journalWorkloads: Workload[] = [
  journalCodecJson,
  journalCodecSuperjson,
  journalRecord,
  journalReplay,
];
