import { Tasks } from "@durablekit/tasks";
import { perSecond } from "../timing";
import type { Figures, Workload } from "../workload";
import { CommitCounter } from "./commit-counter";
import { EventWaiter } from "./tasks-host";

const STEPS = 1_000;

/** Statements that write the run's event log (a settled step's number rides on its journal row). */
const EVENT_LOG = /dk_tasks_run_log/;
const JOURNAL = /dk_tasks_steps/;

/**
 * How each step meets I/O: `batched` (trivial steps, no I/O) or `committed` (the handler awaits
 * `storage.sync()` after each step: a commit per step, as real I/O makes).
 */
type Mode = "batched" | "committed";

/**
 * A 1,000-step run followed live by a reader of its events (`tasks.events.readBatches`, tailing
 * from 0 while the run goes on): what the event stream costs per step in rows, beside the journal's
 * rows, and that the reader saw every event once.
 */
function tasksEventsWorkload(mode: Mode): Workload {
  return {
    name: mode === "batched" ? "tasks-events" : "tasks-events-committed",
    title: `a ${STEPS.toLocaleString("en")}-step run followed live by a reader of its event stream (${mode === "batched" ? "trivial steps, batched" : "a commit after each step"})`,
    metrics: [
      { key: "msTotal", label: `time for ${STEPS} steps, followed`, unit: "ms", better: "lower" },
      {
        key: "rowsPerStep",
        label: "rows written per step (whole run)",
        unit: "rows",
        better: "lower",
      },
      { key: "journalRowsPerStep", label: "journal rows per step", unit: "rows", better: "lower" },
      {
        key: "eventRowsPerStep",
        label: "event-stream rows per step (log rows; a step's event is its journal row)",
        unit: "rows",
        better: "lower",
      },
      {
        key: "eventRowsPerJournalRow",
        label: "event-stream rows ÷ journal rows (2.00 would double a step's rows)",
        unit: "×",
        better: "lower",
      },
      {
        key: "commitsPerStep",
        label: "SQLite commits per step (whole run)",
        unit: "commits",
        better: "lower",
      },
      {
        key: "eventsPerStep",
        label: "events the live reader got, per step (each once, numbered without a gap)",
        unit: "events",
        better: "higher",
      },
    ],
    ours: {
      name: "@durablekit/tasks (tasks.events)",
      async run({ ctx }) {
        const observed = new CommitCounter(ctx);
        const events = new EventWaiter();
        const tasks = new Tasks(observed.state, {
          definitions: {
            "bench@v1": async (input: { n: number }, step) => {
              let sum = 0;
              for (let i = 0; i < input.n; i++) {
                sum += await step.do(`s${i}`, () => i);
                if (mode === "committed") await ctx.storage.sync();
              }
              return sum;
            },
          },
          onEvent: (event) => events.see(event.type),
        });
        const followed = async (counted: boolean): Promise<Figures> => {
          observed.counting = counted;
          const mark = observed.mark();
          const start = performance.now();
          const completed = events.next("task:completed");
          const { runId } = await tasks.run("bench@v1", { n: STEPS });
          let seen = 0;
          let gapless = true;
          for await (const batch of tasks.events.readBatches(runId)) {
            for (const { seq } of batch) {
              if (seq !== seen) gapless = false;
              seen++;
            }
          }
          await completed;
          const msTotal = performance.now() - start;
          if (!gapless) throw new Error("the live reader saw a gap or a repeat");
          const figures: Figures = { msTotal, stepsPerSecond: perSecond(STEPS, msTotal) };
          if (!counted) return figures;
          const journal = observed.sql.counts(mark, JOURNAL).rowsWritten;
          const log = observed.sql.counts(mark, EVENT_LOG).rowsWritten;
          const commits = await observed.commits(mark);
          observed.counting = false;
          return {
            ...figures,
            rowsPerStep: observed.rowsWritten(mark) / STEPS,
            journalRowsPerStep: journal / STEPS,
            eventRowsPerStep: log / STEPS,
            eventRowsPerJournalRow: log / journal,
            commitsPerStep: commits / STEPS,
            eventsPerStep: seen / STEPS,
          };
        };
        const timed = await followed(false);
        return { ...(await followed(true)), msTotal: timed.msTotal as number };
      },
    },
  };
}

/** The followed run, batched and with a commit per step. */
export const tasksEventsWorkloads: Workload[] = [
  tasksEventsWorkload("batched"),
  tasksEventsWorkload("committed"),
];
