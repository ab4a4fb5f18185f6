import type { Workload } from "../workload";
import { tasksJournal } from "./tasks-journal";
import { tasksRun } from "./tasks-run";
import { tasksWorkflows } from "./tasks-workflows";

/** The @durablekit/tasks workloads, in print order. */
export const tasksWorkloads: Workload[] = [tasksRun, tasksJournal, tasksWorkflows];
