import type { Workload } from "../workload";
import { tasksClaimCost } from "./tasks-claim-cost";
import { tasksEventsWorkloads } from "./tasks-events";
import { tasksFlow, tasksSchedules } from "./tasks-flow";
import { tasksJournal } from "./tasks-journal";
import { tasksRunWorkloads } from "./tasks-run";
import { tasksWorkflows } from "./tasks-workflows";

/** The @durablekit/tasks workloads, in print order. */
export const tasksWorkloads: Workload[] = [
  ...tasksRunWorkloads,
  ...tasksEventsWorkloads,
  tasksJournal,
  tasksWorkflows,
  tasksClaimCost,
  tasksFlow,
  tasksSchedules,
];
