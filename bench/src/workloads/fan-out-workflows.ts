import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import type { Workload, WorkloadContext } from "../workload";
import type { FanParent } from "./fan-out";
import { waitForState } from "./tasks-host";

/** The children of one fan-out. */
const CHILDREN = 50;

/** What a child Workflow instance takes: its position, and the parent instance it reports to. */
interface ChildParams {
  i: number;
  parent: string;
}

/**
 * A child of the Workflows fan-out: one step answering `i²`, then one step that sends it to its
 * parent instance as an event (`instance.sendEvent`), as a child Workflow reports to its parent.
 */
export class FanChildWorkflow extends WorkflowEntrypoint<unknown, ChildParams> {
  override async run(event: Readonly<WorkflowEvent<ChildParams>>, step: WorkflowStep) {
    const { i, parent } = event.payload;
    const square = await step.do("work", async () => i * i);
    await step.do("report", async () => {
      const env = this.env as unknown as WorkflowsEnv;
      await (await env.FAN_PARENT_WORKFLOW.get(parent)).sendEvent({
        type: `child-${i}`,
        payload: { square },
      });
    });
    return square;
  }
}

/**
 * The parent of the Workflows fan-out: starts its children as Workflow instances in one step
 * (`createBatch`), then waits for each child's event (`step.waitForEvent`), and sums the squares.
 */
export class FanParentWorkflow extends WorkflowEntrypoint<unknown, { children: number }> {
  override async run(event: Readonly<WorkflowEvent<{ children: number }>>, step: WorkflowStep) {
    const n = event.payload.children;
    const parent = event.instanceId;
    await step.do("start children", async () => {
      const env = this.env as unknown as WorkflowsEnv;
      await env.FAN_CHILD_WORKFLOW.createBatch(
        Array.from({ length: n }, (_, i) => ({ id: `${parent}-${i}`, params: { i, parent } })),
      );
    });
    const reports = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        step.waitForEvent<{ square: number }>(`child ${i}`, {
          type: `child-${i}`,
          timeout: "10 minutes",
        }),
      ),
    );
    return reports.reduce((sum, report) => sum + report.payload.square, 0);
  }
}

interface WorkflowsEnv {
  FAN_PARENT_WORKFLOW: Workflow<{ children: number }>;
  FAN_CHILD_WORKFLOW: Workflow<ChildParams>;
  FAN_PARENT: DurableObjectNamespace<FanParent>;
}

const squares = Array.from({ length: CHILDREN }, (_, i) => i * i).reduce((a, b) => a + b, 0);

async function durable({ env }: WorkloadContext) {
  const e = env as unknown as WorkflowsEnv;
  const prefix = crypto.randomUUID();
  const start = performance.now();
  const sum = await e.FAN_PARENT.getByName(`parent-${prefix}`).fanOut(CHILDREN, prefix);
  const ms = performance.now() - start;
  if (sum !== squares) throw new Error(`the fan-out answered ${sum}`);
  return { ms };
}

async function workflows({ env }: WorkloadContext) {
  const e = env as unknown as WorkflowsEnv;
  const start = performance.now();
  const instance = await e.FAN_PARENT_WORKFLOW.create({ params: { children: CHILDREN } });
  let output: unknown;
  await waitForState(async () => {
    const { status, error, output: out } = await instance.status();
    if (status === "errored" || status === "terminated") {
      throw new Error(`workflow ${status}: ${JSON.stringify(error)}`);
    }
    output = out;
    return { state: status };
  }, ["complete"]);
  const ms = performance.now() - start;
  if (output !== squares) throw new Error(`the workflow answered ${JSON.stringify(output)}`);
  return { ms };
}

/**
 * A fan-out of 50 children and its fan-in, each child durable work in its own unit: durablekit
 * child runs in 50 objects (`startChildren`, `awaitChildren`) against Cloudflare Workflows in local
 * mode, a parent instance that starts 50 child instances (`createBatch`) and awaits an event from
 * each (`waitForEvent`; a child reports with `sendEvent`). From the start to the parent's result.
 */
export const fanOutWorkflows: Workload = {
  name: "fan-out-workflows",
  title: `a fan-out of ${CHILDREN} durable children and its fan-in: child runs in ${CHILDREN} objects (durablekit tasks) vs child Workflow instances reporting to a parent instance by event (Cloudflare Workflows, local)`,
  metrics: [
    {
      key: "ms",
      label: `${CHILDREN} children: time to the parent's result`,
      unit: "ms",
      better: "lower",
    },
  ],
  ours: { name: "durable child runs", run: durable },
  anchor: { name: "Cloudflare Workflows (local)", run: workflows },
};
