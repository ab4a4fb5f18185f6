import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { Tasks } from "@durablekit/tasks";
import { perSecond } from "../timing";
import type { Workload } from "../workload";
import { EventWaiter, waitForState } from "./tasks-host";

const STEPS = 1_000;

/**
 * The same 1,000 trivial steps as a Cloudflare Workflow, run by the local Workflows engine of this
 * `wrangler dev` (binding `TASKS_BENCH_WORKFLOW` in bench/wrangler.jsonc).
 */
export class TasksBenchWorkflow extends WorkflowEntrypoint<unknown, { n: number }> {
  override async run(event: Readonly<WorkflowEvent<{ n: number }>>, step: WorkflowStep) {
    let sum = 0;
    for (let i = 0; i < event.payload.n; i++) sum += await step.do(`s${i}`, async () => i);
    return sum;
  }
}

interface WorkflowsEnv {
  TASKS_BENCH_WORKFLOW: Workflow<{ n: number }>;
}

/**
 * A 1,000-step run of trivial steps against Cloudflare Workflows in local mode (the engine miniflare
 * runs inside this `wrangler dev`): from `create()` to status `complete`, polled from the bench object.
 * Rows written are not comparable (the engine writes to its own objects), so only time is reported.
 */
export const tasksWorkflows: Workload = {
  name: "tasks-workflows",
  title: `a ${STEPS.toLocaleString("en")}-step run of trivial steps vs Cloudflare Workflows (local mode)`,
  metrics: [
    { key: "msTotal", label: `time for ${STEPS} steps`, unit: "ms", better: "lower" },
    { key: "stepsPerSecond", label: "steps/s", unit: "steps/s", better: "higher" },
  ],
  ours: {
    name: "@durablekit/tasks",
    async run({ ctx }) {
      const events = new EventWaiter();
      const tasks = new Tasks(ctx, {
        onEvent: (event) => events.see(event.type),
        definitions: {
          "bench@v1": async (input: { n: number }, step) => {
            let sum = 0;
            for (let i = 0; i < input.n; i++) sum += await step.do(`s${i}`, () => i);
            return sum;
          },
        },
      });
      const start = performance.now();
      const completed = events.next("task:completed");
      await tasks.run("bench@v1", { n: STEPS });
      await completed;
      const msTotal = performance.now() - start;
      return { msTotal, stepsPerSecond: perSecond(STEPS, msTotal) };
    },
  },
  anchor: {
    name: "Cloudflare Workflows (local)",
    async run({ env }) {
      const workflow = (env as unknown as WorkflowsEnv).TASKS_BENCH_WORKFLOW;
      const start = performance.now();
      const instance = await workflow.create({ params: { n: STEPS } });
      await waitForState(async () => {
        const { status, error } = await instance.status();
        if (status === "errored" || status === "terminated") {
          throw new Error(`workflow ${status}: ${JSON.stringify(error)}`);
        }
        return { state: status };
      }, ["complete"]);
      const msTotal = performance.now() - start;
      return { msTotal, stepsPerSecond: perSecond(STEPS, msTotal) };
    },
  },
};
