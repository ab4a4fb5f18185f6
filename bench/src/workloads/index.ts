import type { Workload } from "../workload";
import { bridgeWorkloads } from "./bridge-workloads";
import { chatHistory, chatTurns, chatTurnsReclaim } from "./chat-turns";
import { fanOut } from "./fan-out";
import { fanOutWorkflows } from "./fan-out-workflows";
import { inspectViews } from "./inspect";
import { journalWorkloads } from "./journal-workloads";
import { sqliteFloor } from "./sqlite-floor";
import { sseSubscriptions } from "./sse-subscriptions";
import { streamsWorkloads } from "./streams-workloads";
import { tasksWorkloads } from "./tasks-workloads";

/** Every workload, in the order the runner prints them. Later packages add theirs here. */
export const workloads: Workload[] = [
  sqliteFloor,
  ...journalWorkloads,
  ...streamsWorkloads,
  ...tasksWorkloads,
  sseSubscriptions,
  fanOut,
  fanOutWorkflows,
  ...bridgeWorkloads,
  chatTurns,
  chatTurnsReclaim,
  chatHistory,
  inspectViews,
];
