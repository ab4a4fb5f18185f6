import { Tasks } from "@durablekit/tasks";
import type { TaskStep as AnchorStep } from "agents/tasks";
import { perSecond } from "../timing";
import type { Figures, Workload } from "../workload";
import { CommitCounter } from "./commit-counter";
import { anchorTasks, EventWaiter, watchAnchorEvents } from "./tasks-host";

const STEPS = 1_000;

/**
 * How the steps of a run meet I/O:
 * - `batched`: trivial steps and no I/O, so the whole run can sit in one SQLite transaction;
 * - `committed`: trivial steps, the handler awaiting `storage.sync()` after each (a commit per step);
 * - `io`: each step's callback awaits `scheduler.wait(0)`, a real turn of the event loop, as a step
 *   that calls out does (workerd commits what the previous turn wrote).
 */
type Mode = "batched" | "committed" | "io";

/** The part of a step API both sides share. */
interface StepApi {
  do(name: string, fn: () => number | Promise<number>): Promise<number>;
}

/** The handler both sides run: `n` steps, each returning its index, met with I/O as `mode` says. */
function handlerFor(mode: Mode, storage: DurableObjectStorage) {
  return async (input: { n: number }, step: StepApi): Promise<number> => {
    let sum = 0;
    for (let i = 0; i < input.n; i++) {
      if (mode === "io") {
        sum += await step.do(`s${i}`, async () => {
          await meetIo(mode, storage);
          return i;
        });
      } else {
        sum += await step.do(`s${i}`, () => i);
        await meetIo(mode, storage);
      }
    }
    return sum;
  };
}

/** Pauses the way `mode` meets I/O between two operations (nothing when batched). */
async function meetIo(mode: Mode, storage: DurableObjectStorage): Promise<void> {
  if (mode === "committed") await storage.sync();
  else if (mode === "io") await scheduler.wait(0);
}

/** Raw inserts of the commit counter's own check: one per operation, met with I/O as `mode` says. */
const CHECK_INSERTS = 100;

/** A side's runner: starts a run of `n` steps and resolves when it completed. */
type RunToCompletion = (n: number) => Promise<void>;

/**
 * One timed run with commit counting off, then one counted run (rows and commits), both from
 * `run()` (warm start) to the completed event, over the same observed state.
 */
async function measure(
  mode: Mode,
  observed: CommitCounter,
  run: RunToCompletion,
): Promise<Figures> {
  const start = performance.now();
  await run(STEPS);
  const msTotal = performance.now() - start;
  observed.counting = true;
  const mark = observed.mark();
  await run(STEPS);
  const rowsWritten = observed.rowsWritten(mark);
  const commits = await observed.commits(mark);
  // The counter's own check: raw inserts met with I/O the same way must read 1.00 commits each
  // (batched: 1 ÷ CHECK_INSERTS).
  const sql = observed.state.storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS bench_commit_check (id INTEGER PRIMARY KEY)");
  const checkMark = observed.mark();
  for (let i = 0; i < CHECK_INSERTS; i++) {
    sql.exec("INSERT INTO bench_commit_check DEFAULT VALUES");
    await meetIo(mode, observed.state.storage);
  }
  const checkCommits = await observed.commits(checkMark);
  observed.counting = false;
  return {
    msTotal,
    stepsPerSecond: perSecond(STEPS, msTotal),
    usPerStep: (msTotal * 1000) / STEPS,
    rowsPerStep: rowsWritten / STEPS,
    commitsPerStep: commits / STEPS,
    counterCheck: checkCommits / CHECK_INSERTS,
  };
}

const TITLES: Record<Mode, string> = {
  batched: "trivial steps, batched (no I/O: the run can sit in one transaction)",
  committed: "trivial steps, a commit after each (the handler awaits storage.sync())",
  io: "steps that await I/O (each callback awaits scheduler.wait(0), a new turn)",
};

/**
 * A 1,000-step run, `run()` (warm start) to completed, in one {@link Mode}: time, and rows written
 * and SQLite commits per step for the whole run (acceptance, claim, steps and settle).
 */
function tasksRunWorkload(mode: Mode): Workload {
  return {
    name: mode === "batched" ? "tasks-run" : `tasks-run-${mode}`,
    title: `a ${STEPS.toLocaleString("en")}-step run, run() to completed: ${TITLES[mode]}`,
    metrics: [
      { key: "msTotal", label: `time for ${STEPS} steps`, unit: "ms", better: "lower" },
      { key: "stepsPerSecond", label: "steps/s", unit: "steps/s", better: "higher" },
      { key: "usPerStep", label: "per step", unit: "µs", better: "lower" },
      {
        key: "rowsPerStep",
        label: "rows written per step (whole run)",
        unit: "rows",
        better: "lower",
      },
      {
        key: "commitsPerStep",
        label: "SQLite commits per step (whole run)",
        unit: "commits",
        better: "lower",
      },
      {
        key: "counterCheck",
        label: `commit counter check: commits per raw insert met the same way (must be ${mode === "batched" ? "0.01" : "1.00"})`,
        unit: "commits",
        better: "lower",
      },
    ],
    ours: {
      name: "@durablekit/tasks",
      run({ ctx }) {
        const observed = new CommitCounter(ctx);
        const events = new EventWaiter();
        const tasks = new Tasks(observed.state, {
          definitions: { "bench@v1": handlerFor(mode, ctx.storage) },
          onEvent: (event) => events.see(event.type),
        });
        return measure(mode, observed, async (n) => {
          const completed = events.next("task:completed");
          await tasks.run("bench@v1", { n });
          await completed;
        });
      },
    },
    anchor: {
      name: "agents@0.32.0 (agents/tasks)",
      async run({ ctx, env }) {
        const observed = new CommitCounter(ctx);
        const events = new EventWaiter();
        const stop = watchAnchorEvents(events);
        const handler = handlerFor(mode, ctx.storage);
        const { tasks } = await anchorTasks(observed.state, env, {
          "bench@v1": (input, step: AnchorStep) => handler(input as { n: number }, step),
        });
        try {
          return await measure(mode, observed, async (n) => {
            const completed = events.next("task:completed");
            await tasks.run("bench@v1", { n });
            await completed;
          });
        } finally {
          stop();
        }
      },
    },
  };
}

/** The same run batched, with a commit per step, and with steps that await I/O. */
export const tasksRunWorkloads: Workload[] = [
  tasksRunWorkload("batched"),
  tasksRunWorkload("committed"),
  tasksRunWorkload("io"),
];
