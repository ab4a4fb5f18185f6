import type { Workload } from "../workload";
import { tasksClaimCost } from "./tasks-claim-cost";
import { tasksJournal } from "./tasks-journal";
import { tasksRunWorkloads } from "./tasks-run";
import { tasksWorkflows } from "./tasks-workflows";

/** The @durablekit/tasks workloads, in print order. */
export const tasksWorkloads: Workload[] = [
  ...tasksRunWorkloads,
  tasksJournal,
  tasksWorkflows,
  tasksClaimCost,
];
