import { type TaskStep, Tasks } from "@durablekit/tasks";
import { countingState } from "@durablekit/test-kit";
import type { Figures, Workload, WorkloadContext } from "../workload";

/** An hour of a step in flight, on the engine's clock. */
const HOUR_MS = 3_600_000;

/**
 * What keeping one step in flight for an hour costs: the engine extends the attempt's claim from
 * the object's alarm once per `claimTimeoutMs` (so a dead attempt is reclaimed within that bound
 * when nothing else wakes the object). Driven on a simulated clock (`now`): each alarm is called
 * when the engine asks for it, until an hour has passed; rows are SQLite's own `rowsWritten`.
 */
async function hourInFlight(
  { ctx }: WorkloadContext,
  claimTimeoutMs: number | undefined,
): Promise<Figures> {
  const counted = countingState(ctx);
  let clock = Date.now();
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tasks = new Tasks(counted.state, {
    definitions: {
      "hold@v1": async (_input: null, step: TaskStep) => step.do("hold", () => held),
    },
    now: () => clock,
    ...(claimTimeoutMs === undefined ? {} : { claimTimeoutMs }),
  });
  await tasks.run("hold@v1", null);
  const mark = counted.mark();
  const end = clock + HOUR_MS;
  let alarms = 0;
  for (;;) {
    const at = tasks.nextWakeAt();
    if (at === null || at > end) break;
    clock = Math.max(clock, at);
    await tasks.alarm();
    alarms++;
  }
  const rows = counted.counts(mark).rowsWritten;
  release();
  return { alarms, rows };
}

/**
 * The cost of the default claim deadline (5 s: a run cut by a crash resumes within 5 s with no
 * request) against the 60 s default it replaced: alarms and rows per hour of a running step.
 */
export const tasksClaimCost: Workload = {
  name: "tasks-claim-cost",
  title:
    "one step in flight for an hour: the alarms and rows that keep its claim alive, with the default claimTimeoutMs (5 s) vs the 60 s default it replaced",
  metrics: [
    {
      key: "alarms",
      label: "alarm invocations per hour of a running step",
      unit: "alarms",
      better: "lower",
    },
    {
      key: "rows",
      label: "rows written per hour of a running step",
      unit: "rows",
      better: "lower",
    },
  ],
  ours: { name: "default (5 s)", run: (context) => hourInFlight(context, undefined) },
  anchor: { name: "claimTimeoutMs 60 s", run: (context) => hourInFlight(context, 60_000) },
};
