import { defineTask, type TaskStep, Tasks } from "@durablekit/tasks";
import type { Figures, Workload } from "../workload";
import { CommitCounter } from "./commit-counter";

/** Runs started through the slots; the first `SLOTS` hold them until released. */
const RUNS = 1_000;
const SLOTS = 10;

/** A run that holds its slot until its "go" event when `hold`, then one trivial step. */
async function work(input: { hold: boolean }, step: TaskStep): Promise<number> {
  if (input.hold) await step.waitForEvent("go", { type: "go" });
  return step.do("work", () => 1);
}

/**
 * 1,000 runs of a definition with `concurrency: { limit: 10 }`: 10 take the slots and hold them, the
 * other 990 are started while they do (each `run()` awaited with a commit after it, as separate
 * requests would), so they wait `queued`; then the 10 are let go and the queue drains, each settle
 * handing its slot to the next run in line. The steps are trivial, so the time is the engine's own.
 * The anchor side is the same 1,000 runs of a definition without flow control (each starts at
 * once): what flow control adds per run, in time and rows.
 */
export const tasksFlow: Workload = {
  name: "tasks-flow",
  title: `${RUNS.toLocaleString("en")} runs through ${SLOTS} slots (concurrency limit ${SLOTS}): ${RUNS - SLOTS} queued starts, each committed, then the queue drains`,
  metrics: [
    {
      key: "msTotal",
      label: "time for the 1,000 runs (first run() → last completed), each run() committed",
      unit: "ms",
      better: "lower",
    },
    {
      key: "msDrain",
      label:
        "time from the slots' release to the last run completed (ours: the 990 queued runs drain through the 10 slots; the anchor has only its 10 held runs left)",
      unit: "ms",
      better: "lower",
    },
    {
      key: "rowsPerRun",
      label: "rows written per run (whole life)",
      unit: "rows",
      better: "lower",
    },
    {
      key: "rowsPerQueuedStart",
      label: "rows written per queued start (run(), accepted queued)",
      unit: "rows",
      better: "lower",
    },
    {
      key: "commitsPerQueuedStart",
      label: "SQLite commits per queued start",
      unit: "commits",
      better: "lower",
    },
    {
      key: "rowsPerHandoff",
      label: "rows written per slot handoff (dequeue of the next run, in the settle's transaction)",
      unit: "rows",
      better: "lower",
    },
  ],
  ours: {
    name: "@durablekit/tasks (concurrency: { limit: 10 })",
    async run({ ctx }) {
      return drain(ctx, true);
    },
  },
  anchor: {
    name: "@durablekit/tasks without flow control (every run starts at once)",
    async run({ ctx }) {
      return drain(ctx, false);
    },
  },
};

async function drain(ctx: DurableObjectState, limited: boolean): Promise<Figures> {
  const observed = new CommitCounter(ctx);
  let completed = 0;
  let allDone: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const tasks = new Tasks(observed.state, {
    definitions: {
      "flow@v1": limited ? defineTask({ handler: work, concurrency: { limit: SLOTS } }) : work,
    },
    onEvent: (event) => {
      if (event.type === "task:completed" && ++completed === RUNS) allDone();
    },
  });
  const start = observed.mark();
  const first = performance.now();
  const holders: string[] = [];
  for (let i = 0; i < SLOTS; i++) {
    holders.push((await tasks.run("flow@v1", { hold: true })).runId);
  }
  await ctx.storage.sync();
  observed.counting = true;
  const queuedMark = observed.mark();
  for (let i = SLOTS; i < RUNS; i++) {
    await tasks.run("flow@v1", { hold: false });
    await ctx.storage.sync();
  }
  const queuedRows = observed.rowsWritten(queuedMark);
  const queuedCommits = await observed.commits(queuedMark);
  observed.counting = false;
  const drainMark = observed.mark();
  const began = performance.now();
  for (const runId of holders) await tasks.sendEvent(runId, "go");
  await done;
  const msDrain = performance.now() - began;
  const msTotal = performance.now() - first;
  // Each handoff is the dequeue's one statement (the run row and its index entries) and the
  // `task:dequeued` row of the run's log, written in the transaction of the settle that freed it.
  const handoffs = observed.sql.counts(
    drainMark,
    /SET state = 'pending', next_at = \?, queued_for = NULL/,
  );
  return {
    msTotal,
    msDrain,
    rowsPerRun: observed.rowsWritten(start) / RUNS,
    rowsPerQueuedStart: queuedRows / (RUNS - SLOTS),
    commitsPerQueuedStart: queuedCommits / (RUNS - SLOTS),
    rowsPerHandoff:
      handoffs.statements === 0
        ? 0
        : (handoffs.rowsWritten + handoffs.statements) / handoffs.statements,
  };
}

/** Simulated minutes of the schedule workload: one day of a `* * * * *` schedule. */
const MINUTES = 1_440;
const DAY = Date.UTC(2030, 0, 1);

/**
 * A `* * * * *` schedule over one simulated day: the alarm is called at each tick on a test clock
 * (as the platform calls it), and each tick's run (one step) completes before the next. Counted:
 * rows and commits per tick, the run included, and the schedule's own row writes per tick.
 */
export const tasksSchedules: Workload = {
  name: "tasks-schedules",
  title: `a * * * * * schedule over ${MINUTES.toLocaleString("en")} simulated minutes: one run per tick, from the alarm`,
  metrics: [
    {
      key: "msPerTick",
      label: "time per tick (alarm → its run completed)",
      unit: "ms",
      better: "lower",
    },
    {
      key: "rowsPerTick",
      label: "rows written per tick (the run's whole life included)",
      unit: "rows",
      better: "lower",
    },
    {
      key: "scheduleRowsPerTick",
      label: "rows of the schedule's own row per tick",
      unit: "rows",
      better: "lower",
    },
    {
      key: "commitsPerTick",
      label: "SQLite commits per tick (the alarm's pass, then the run)",
      unit: "commits",
      better: "lower",
    },
    {
      key: "runsPerTick",
      label: "runs started per tick (exactly 1)",
      unit: "runs",
      better: "higher",
    },
  ],
  ours: {
    name: "@durablekit/tasks (schedules)",
    async run({ ctx }) {
      const observed = new CommitCounter(ctx);
      let clock = DAY - 1;
      let completed = 0;
      let tick: () => void = () => {};
      const tasks = new Tasks(observed.state, {
        now: () => clock,
        definitions: {
          "tick@v1": defineTask({
            handler: async (_input: unknown, step: TaskStep) => step.do("tick", () => 1),
            schedules: [{ id: "minute", cron: "* * * * *" }],
          }),
        },
        onEvent: (event) => {
          if (event.type === "task:completed") {
            completed += 1;
            tick();
          }
        },
      });
      await ctx.storage.sync();
      observed.counting = true;
      const mark = observed.mark();
      const began = performance.now();
      for (let minute = 0; minute < MINUTES; minute++) {
        clock = DAY + minute * 60_000;
        const ran = new Promise<void>((resolve) => {
          tick = resolve;
        });
        await tasks.alarm();
        await ran;
        await ctx.storage.sync();
      }
      const ms = performance.now() - began;
      const commits = await observed.commits(mark);
      observed.counting = false;
      if (completed !== MINUTES) throw new Error(`${completed} runs for ${MINUTES} ticks`);
      return {
        msPerTick: ms / MINUTES,
        rowsPerTick: observed.rowsWritten(mark) / MINUTES,
        scheduleRowsPerTick: observed.sql.counts(mark, /dk_tasks_schedules/).rowsWritten / MINUTES,
        commitsPerTick: commits / MINUTES,
        runsPerTick: tasks.countByState({ max: 10_000 }).byState.completed / MINUTES,
      };
    },
  },
};
