import { Tasks } from "@durablekit/tasks";
import { countingState } from "@durablekit/test-kit";
import type { TaskStep as AnchorStep } from "agents/tasks";
import { perSecond } from "../timing";
import type { Workload } from "../workload";
import { anchorTasks, EventWaiter, watchAnchorEvents } from "./tasks-host";

const STEPS = 1_000;

/** The handler both sides run: `n` trivial steps, each returning its index. */
async function trivialSteps(
  input: { n: number },
  step: { do(name: string, fn: () => number): Promise<number> },
): Promise<number> {
  let sum = 0;
  for (let i = 0; i < input.n; i++) sum += await step.do(`s${i}`, () => i);
  return sum;
}

/**
 * A 1,000-step run of trivial steps, from `run()` (warm start) to the completed state: time, and
 * rows written per step for the whole run (acceptance, claim, steps and settle).
 */
export const tasksRun: Workload = {
  name: "tasks-run",
  title: `a ${STEPS.toLocaleString("en")}-step run of trivial steps, run() to completed`,
  metrics: [
    { key: "msTotal", label: `time for ${STEPS} steps`, unit: "ms", better: "lower" },
    { key: "stepsPerSecond", label: "steps/s", unit: "steps/s", better: "higher" },
    {
      key: "rowsPerStep",
      label: "rows written per step (whole run)",
      unit: "rows",
      better: "lower",
    },
  ],
  ours: {
    name: "@durablekit/tasks",
    async run({ ctx }) {
      const counter = countingState(ctx);
      const events = new EventWaiter();
      const tasks = new Tasks(counter.state, {
        definitions: { "bench@v1": trivialSteps },
        onEvent: (event) => events.see(event.type),
      });
      const mark = counter.mark();
      const start = performance.now();
      const completed = events.next("task:completed");
      await tasks.run("bench@v1", { n: STEPS });
      await completed;
      const msTotal = performance.now() - start;
      return {
        msTotal,
        stepsPerSecond: perSecond(STEPS, msTotal),
        rowsPerStep: counter.counts(mark).rowsWritten / STEPS,
      };
    },
  },
  anchor: {
    name: "agents@0.32.0 (agents/tasks)",
    async run({ ctx, env }) {
      const counter = countingState(ctx);
      const events = new EventWaiter();
      const stop = watchAnchorEvents(events);
      const { tasks } = await anchorTasks(counter.state, env, {
        "bench@v1": (input, step: AnchorStep) => trivialSteps(input as { n: number }, step),
      });
      const mark = counter.mark();
      const start = performance.now();
      const completed = events.next("task:completed");
      await tasks.run("bench@v1", { n: STEPS });
      await completed;
      const msTotal = performance.now() - start;
      stop();
      return {
        msTotal,
        stepsPerSecond: perSecond(STEPS, msTotal),
        rowsPerStep: counter.counts(mark).rowsWritten / STEPS,
      };
    },
  },
};
