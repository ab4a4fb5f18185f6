import { encode } from "@durablekit/handle-journal";
import { Inspector } from "@durablekit/inspect";
import { Tasks } from "@durablekit/tasks";
import { countingState } from "@durablekit/test-kit";
import { timeLoop } from "../timing";
import type { Workload } from "../workload";

/** Steps of the run whose view is timed. */
const STEPS = 1_000;
/** Runs the list page is read among. */
const RUNS = 100_000;
/** Page size of the timed list read. */
const PAGE = 50;
/** Reads per timed figure (the figure is the mean of one loop). */
const READS = 50;
/** Steps of the run whose view's size is measured, and the characters of each step's result. */
const BIG_STEPS = 24;
const BIG_CHARS = 1_000_000;
/** The newest runs seeded with a 1 MB result (all 100,000 of them would be 100 GB). */
const BIG_RESULTS = 100;

/**
 * Seeds runs `first`…`last` of `bench.other@v1`, settled, newest last, straight into the engine's
 * run table with one statement: accepting 100,000 runs through `run()` would time the engine, not
 * the inspector. The rows are what `run()` and a settle write (state, input, result, times); with
 * `big`, each result is a 1 MB string, built by SQLite itself.
 */
function seedRuns(sql: SqlStorage, first: number, last: number, at: number, big: boolean): void {
  sql.exec(
    `WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO dk_tasks_runs (run_id, definition, state, input, retain, attempt, result,
       created_at, started_at, updated_at, settled_at)
     SELECT printf('seeded-%06d', i), 'bench.other@v1', 'completed', ?, 1, 1,
       CASE WHEN ? THEN '{"json":"' || printf('%.*c', ${BIG_CHARS}, 'r') || '"}' ELSE ? END,
       ? + i, ? + i, ? + i, ? + i
     FROM n`,
    first,
    last,
    encode(undefined),
    big ? 1 : 0,
    encode(0),
    at,
    at,
    at,
    at,
  );
}

/** Waits for a run the object is running to complete. */
async function completed(tasks: Tasks, runId: string): Promise<void> {
  for (let i = 0; i < 1_000 && tasks.get(runId)?.state !== "completed"; i++) {
    await scheduler.wait(10);
  }
  if (tasks.get(runId)?.state !== "completed") throw new Error(`run ${runId} did not complete`);
}

/**
 * What the inspector costs in the object: a 1,000-step run's view (its facts, its attempts and every
 * step on the time axis) and a page of 50 runs among 100,000, each read {@link READS} times; the
 * bytes a view of 24 steps of 1 MB answers; the rows a filter matching nothing and the overview read
 * among 100,000 runs (the newest 100 with 1 MB results); and the rows the inspector wrote while
 * reading (through a counting view of the object's SQL). No anchor has an inspector; the figures
 * stand alone.
 */
export const inspectViews: Workload = {
  name: "inspect",
  title: `the inspector's reads: a ${STEPS.toLocaleString("en")}-step run's view, a run of ${BIG_STEPS} × 1 MB steps, and pages, filters and counts among ${RUNS.toLocaleString("en")} runs`,
  metrics: [
    {
      key: "runViewMs",
      label: `run(runId) of a ${STEPS.toLocaleString("en")}-step run (goal ≤ 5)`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "historyMs",
      label: `tasks.history(runId) of that run: the part's own read, which the view maps`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "bigRunViewBytes",
      label: `run(runId) of a run of ${BIG_STEPS} steps of 1 MB each (and a 1 MB result): bytes answered (25 MB before)`,
      unit: "bytes",
      better: "lower",
    },
    {
      key: "listPageMs",
      label: `runs({ limit: ${PAGE} }) among ${RUNS.toLocaleString("en")} runs, first page (goal ≤ 5)`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "listDeepMs",
      label: `runs({ limit: ${PAGE}, cursor }) among ${RUNS.toLocaleString("en")} runs, a page 1,000 runs in (goal ≤ 5)`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "noMatchRowsRead",
      label: `runs({ state: "cancelled" }) and runs({ definition: "none@v1" }) among ${RUNS.toLocaleString("en")} runs, matching nothing: rows read (${(2 * RUNS).toLocaleString("en")} before)`,
      unit: "rows",
      better: "lower",
    },
    {
      key: "bigPageRowsRead",
      label: `runs({ limit: ${BIG_RESULTS} }): the newest ${BIG_RESULTS} runs, each with a 1 MB result: rows read`,
      unit: "rows",
      better: "lower",
    },
    {
      key: "bigPageMs",
      label: `runs({ limit: ${BIG_RESULTS} }) of those ${BIG_RESULTS} runs with 1 MB results`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "bigPageFullMs",
      label: `the same page read with its values (tasks.list({ limit: ${BIG_RESULTS} }), what the inspector read before)`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "overviewRowsRead",
      label: `overview() among ${RUNS.toLocaleString("en")} runs (the newest ${BIG_RESULTS} with 1 MB results): rows read`,
      unit: "rows",
      better: "lower",
    },
    {
      key: "overviewMs",
      label: `overview() among ${RUNS.toLocaleString("en")} runs (the newest ${BIG_RESULTS} with 1 MB results): each state counted up to 1,000`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "overviewBeforeMs",
      label:
        "the newest 1,000 runs read with their values (tasks.list({ limit: 1000 }), what overview() read before to count them)",
      unit: "ms",
      better: "lower",
    },
    { key: "rowsWritten", label: "rows written by the inspector", unit: "rows", better: "lower" },
  ],
  ours: {
    name: "@durablekit/inspect",
    async run({ ctx }) {
      const counting = countingState(ctx);
      const tasks = new Tasks(counting.state, {
        definitions: {
          "bench.steps@v1": async (input: { n: number }, step) => {
            let sum = 0;
            for (let i = 0; i < input.n; i++) sum += await step.do(`s${i}`, () => i);
            return sum;
          },
          "bench.big@v1": async (input: { n: number }, step) => {
            for (let i = 0; i < input.n; i++) await step.do(`s${i}`, () => "x".repeat(BIG_CHARS));
            return "y".repeat(BIG_CHARS);
          },
          "bench.other@v1": async () => 0,
        },
      });
      const at = Date.now() - 10 * RUNS;
      seedRuns(ctx.storage.sql, 1, RUNS - BIG_RESULTS, at, false);
      seedRuns(ctx.storage.sql, RUNS - BIG_RESULTS + 1, RUNS, at, true);
      const { runId } = await tasks.run("bench.steps@v1", { n: STEPS });
      await completed(tasks, runId);
      const big = await tasks.run("bench.big@v1", { n: BIG_STEPS });
      await completed(tasks, big.runId);
      const inspector = new Inspector(counting.state, { parts: [tasks] });
      counting.reset();
      const view = inspector.run(runId);
      if (view?.steps.length !== STEPS) throw new Error("the run view lacks steps");
      const runViewMs = timeLoop(READS, () => inspector.run(runId)) / READS;
      const historyMs = timeLoop(READS, () => tasks.history(runId)) / READS;
      const bigView = inspector.run(big.runId);
      if (bigView?.steps.length !== BIG_STEPS) throw new Error("the big run's view lacks steps");
      const bigRunViewBytes = new TextEncoder().encode(JSON.stringify(bigView)).byteLength;

      const first = inspector.runs({ limit: PAGE });
      if (first.items.length !== PAGE) throw new Error("the list page is short");
      const listPageMs = timeLoop(READS, () => inspector.runs({ limit: PAGE })) / READS;
      let cursor = first.next ?? undefined;
      for (let i = 0; i < 1_000 / PAGE - 1; i++) {
        cursor = inspector.runs({ limit: PAGE, cursor }).next ?? undefined;
      }
      const listDeepMs = timeLoop(READS, () => inspector.runs({ limit: PAGE, cursor })) / READS;

      let mark = counting.mark();
      const none = [
        inspector.runs({ state: "cancelled" }),
        inspector.runs({ definition: "none@v1" }),
      ];
      if (none.some((page) => page.items.length > 0)) throw new Error("a filter matched");
      const noMatchRowsRead = counting.counts(mark).rowsRead;

      mark = counting.mark();
      if (inspector.runs({ limit: BIG_RESULTS }).items.length !== BIG_RESULTS) {
        throw new Error("the page of runs with large results is short");
      }
      const bigPageRowsRead = counting.counts(mark).rowsRead;
      const bigPageMs = timeLoop(READS, () => inspector.runs({ limit: BIG_RESULTS })) / READS;
      // The reads the inspector made before, for the ratio: the runs with their results decoded.
      const full = Math.max(1, Math.floor(READS / 10));
      const bigPageFullMs = timeLoop(full, () => tasks.list({ limit: BIG_RESULTS })) / full;

      mark = counting.mark();
      const overview = inspector.overview();
      if (overview.runs?.byState.completed !== 1_000) throw new Error("the overview miscounted");
      const overviewRowsRead = counting.counts(mark).rowsRead;
      const overviewMs = timeLoop(READS, () => inspector.overview()) / READS;
      const overviewBeforeMs = timeLoop(full, () => tasks.list({ limit: 1_000 })) / full;
      return {
        runViewMs,
        historyMs,
        bigRunViewBytes,
        listPageMs,
        listDeepMs,
        noMatchRowsRead,
        bigPageRowsRead,
        bigPageMs,
        bigPageFullMs,
        overviewRowsRead,
        overviewMs,
        overviewBeforeMs,
        rowsWritten: counting.counts().rowsWritten,
      };
    },
  },
};
