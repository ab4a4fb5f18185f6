import type { Workload } from "../workload";
import { bridgeWorkloads } from "./bridge-workloads";
import { chatTurns, chatTurnsReclaim } from "./chat-turns";
import { fanOut } from "./fan-out";
import { inspectViews } from "./inspect";
import { journalWorkloads } from "./journal-workloads";
import { sqliteFloor } from "./sqlite-floor";
import { streamsWorkloads } from "./streams-workloads";
import { tasksWorkloads } from "./tasks-workloads";

/** Every workload, in the order the runner prints them. Later packages add theirs here. */
export const workloads: Workload[] = [
  sqliteFloor,
  ...journalWorkloads,
  ...streamsWorkloads,
  ...tasksWorkloads,
  fanOut,
  ...bridgeWorkloads,
  chatTurns,
  chatTurnsReclaim,
  inspectViews,
];
