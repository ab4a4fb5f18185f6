import type { Workload } from "../workload";
import { tasksJournal } from "./tasks-journal";
import { tasksRunWorkloads } from "./tasks-run";
import { tasksWorkflows } from "./tasks-workflows";

/** The @durablekit/tasks workloads, in print order. */
export const tasksWorkloads: Workload[] = [...tasksRunWorkloads, tasksJournal, tasksWorkflows];
