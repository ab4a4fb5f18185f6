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

/**
 * Seeds `count` settled runs of `bench.other@v1`, newest last, straight into the engine's run table
 * with one statement: accepting 100,000 runs through `run()` would time the engine, not the
 * inspector. The rows are what `run()` and a settle write (state, input, times).
 */
function seedRuns(sql: SqlStorage, count: number, at: number): void {
  sql.exec(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO dk_tasks_runs (run_id, definition, state, input, retain, attempt, result,
       created_at, started_at, updated_at, settled_at)
     SELECT printf('seeded-%06d', i), 'bench.other@v1', 'completed', ?, 1, 1, ?,
       ? + i, ? + i, ? + i, ? + i
     FROM n`,
    count,
    encode(undefined),
    encode(0),
    at,
    at,
    at,
    at,
  );
}

/**
 * What the inspector costs in the object: a 1,000-step run's view (its facts, its attempts and every
 * step on the time axis) and a page of 50 runs among 100,000, each read {@link READS} times, and the
 * rows the inspector wrote while reading (through a counting view of the object's SQL). No anchor
 * has an inspector; the figures stand alone.
 */
export const inspectViews: Workload = {
  name: "inspect",
  title: `the inspector's reads: a ${STEPS.toLocaleString("en")}-step run's view, and a page of ${PAGE} runs among ${RUNS.toLocaleString("en")}`,
  metrics: [
    {
      key: "runViewMs",
      label: `run(runId) of a ${STEPS.toLocaleString("en")}-step run (goal ≤ 5)`,
      unit: "ms",
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
      key: "overviewMs",
      label: "overview(): runs counted by state among the newest 1,000",
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
          "bench.other@v1": async () => 0,
        },
      });
      seedRuns(ctx.storage.sql, RUNS, Date.now() - 10 * RUNS);
      const { runId } = await tasks.run("bench.steps@v1", { n: STEPS });
      for (let i = 0; i < 500 && tasks.get(runId)?.state !== "completed"; i++) {
        await scheduler.wait(10);
      }
      if (tasks.get(runId)?.state !== "completed") {
        throw new Error("the 1,000-step run did not complete");
      }
      const inspector = new Inspector(counting.state, { parts: [tasks] });
      counting.reset();
      const view = inspector.run(runId);
      if (view?.steps.length !== STEPS) throw new Error("the run view lacks steps");
      const runViewMs = timeLoop(READS, () => inspector.run(runId)) / READS;
      const first = inspector.runs({ limit: PAGE });
      if (first.items.length !== PAGE) throw new Error("the list page is short");
      const listPageMs = timeLoop(READS, () => inspector.runs({ limit: PAGE })) / READS;
      let cursor = first.next ?? undefined;
      for (let i = 0; i < 1_000 / PAGE - 1; i++) {
        cursor = inspector.runs({ limit: PAGE, cursor }).next ?? undefined;
      }
      const listDeepMs = timeLoop(READS, () => inspector.runs({ limit: PAGE, cursor })) / READS;
      const overviewMs = timeLoop(READS, () => inspector.overview()) / READS;
      return {
        runViewMs,
        listPageMs,
        listDeepMs,
        overviewMs,
        rowsWritten: counting.counts().rowsWritten,
      };
    },
  },
};
