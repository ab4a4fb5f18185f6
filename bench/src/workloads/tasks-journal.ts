import { Tasks } from "@durablekit/tasks";
import { type CountingState, countingState } from "@durablekit/test-kit";
import type { TaskStep as AnchorStep } from "agents/tasks";
import type { Figures, Workload } from "../workload";
import { anchorTasks, EventWaiter, watchAnchorEvents } from "./tasks-host";

/** Journal sizes: `n - 1` trivial steps and a short sleep make an `n`-step journal. */
const SIZES = [1_000, 10_000] as const;
/**
 * Runs per size, summed. The in-object clock ticks in whole milliseconds and a 1,000-step replay
 * takes a few, so the 1,000-step figures add up ten runs (10,000 steps either way).
 */
const RUNS: Record<(typeof SIZES)[number], number> = { 1000: 10, 10000: 1 };
const NAP_MS = 5;

async function stepsThenNap(
  input: { n: number },
  step: {
    do(name: string, fn: () => number): Promise<number>;
    sleep(name: string, ms: number): Promise<void>;
  },
): Promise<number> {
  let sum = 0;
  for (let i = 0; i < input.n - 1; i++) sum += await step.do(`s${i}`, () => i);
  await step.sleep("nap", NAP_MS);
  return sum;
}

interface Side {
  counter: CountingState;
  events: EventWaiter;
  start(n: number): Promise<unknown>;
  /** Delivers the wake after the sleep, the way the host's alarm would. */
  wake(): Promise<void>;
}

/**
 * Runs `n` steps live until the run parks, then (after the sleep) replays them to completion. Both
 * intervals bracket one attempt the same way: from the call that starts it (`run` / the wake) to
 * the event its last durable write emits (`task:waiting` after the park / `task:completed` after the
 * settle).
 */
async function liveThenReplay(side: Side, n: number) {
  const liveMark = side.counter.mark();
  const liveStart = performance.now();
  const parked = side.events.next("task:waiting");
  await side.start(n);
  await parked;
  const liveMs = performance.now() - liveStart;
  const liveRows = side.counter.counts(liveMark).rowsWritten;
  await new Promise((resolve) => setTimeout(resolve, NAP_MS + 2));
  const replayMark = side.counter.mark();
  const replayStart = performance.now();
  const completed = side.events.next("task:completed");
  await side.wake();
  await completed;
  const replayMs = performance.now() - replayStart;
  return { liveMs, liveRows, replayMs, replayRows: side.counter.counts(replayMark).rowsWritten };
}

/**
 * For each size: the live attempt (every step executes, then the run parks on the sleep) and, after
 * the sleep, the replay attempt (every step answered from the journal, then the run completes).
 */
async function measure(side: Side): Promise<Figures> {
  // Warm-up (untimed): the object's first run pays for table pages and statement caches, which
  // would otherwise land on the 1,000-step figures only and skew the 1,000 → 10,000 comparison.
  await liveThenReplay(side, 100);
  const figures: Figures = {};
  for (const n of SIZES) {
    const sum = { liveMs: 0, liveRows: 0, replayMs: 0, replayRows: 0 };
    for (let run = 0; run < RUNS[n]; run++) {
      const one = await liveThenReplay(side, n);
      sum.liveMs += one.liveMs;
      sum.liveRows += one.liveRows;
      sum.replayMs += one.replayMs;
      sum.replayRows += one.replayRows;
    }
    const steps = n * RUNS[n];
    figures[`live${n}`] = (sum.liveMs * 1000) / steps;
    figures[`liveRows${n}`] = sum.liveRows / steps;
    figures[`replay${n}`] = (sum.replayMs * 1000) / steps;
    figures[`replayRows${n}`] = sum.replayRows / steps;
  }
  figures.flatness = (figures.live10000 ?? Number.NaN) / (figures.live1000 ?? Number.NaN);
  // Per round, live ÷ replayed of the same round; the report takes the median over the rounds.
  figures.replaySpeedup1000 = (figures.live1000 ?? Number.NaN) / (figures.replay1000 ?? Number.NaN);
  figures.replaySpeedup = (figures.live10000 ?? Number.NaN) / (figures.replay10000 ?? Number.NaN);
  return figures;
}

/**
 * Per-step cost of live steps at 1,000 and 10,000 steps (is it flat?), and replay of a 1,000- and a
 * 10,000-step journal: time per replayed step and rows written by the replay attempt per step.
 */
export const tasksJournal: Workload = {
  name: "tasks-journal",
  title:
    "live steps and replay of a 1,000- and a 10,000-step journal (n−1 trivial steps + a sleep; the wake replays them; 1,000-step figures sum 10 runs)",
  metrics: [
    { key: "live1000", label: "live step, 1,000-step run", unit: "µs/step", better: "lower" },
    { key: "live10000", label: "live step, 10,000-step run", unit: "µs/step", better: "lower" },
    { key: "flatness", label: "live per-step cost 10,000 ÷ 1,000", unit: "×", better: "lower" },
    {
      key: "liveRows10000",
      label: "rows written per live step (10,000)",
      unit: "rows",
      better: "lower",
    },
    {
      key: "replay1000",
      label: "replayed step, 1,000-step journal",
      unit: "µs/step",
      better: "lower",
    },
    {
      key: "replay10000",
      label: "replayed step, 10,000-step journal",
      unit: "µs/step",
      better: "lower",
    },
    {
      key: "replaySpeedup1000",
      label: "live step ÷ replayed step (1,000)",
      unit: "×",
      better: "higher",
    },
    {
      key: "replaySpeedup",
      label: "live step ÷ replayed step (10,000)",
      unit: "×",
      better: "higher",
    },
    {
      key: "replayRows10000",
      label: "rows written per replayed step (10,000; claim+settle included)",
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
        definitions: { "journal@v1": stepsThenNap },
        onEvent: (event) => events.see(event.type),
      });
      return measure({
        counter,
        events,
        start: (n) => tasks.run("journal@v1", { n }),
        wake: () => tasks.alarm(),
      });
    },
  },
  anchor: {
    name: "agents@0.32.0 (agents/tasks)",
    async run({ ctx, env }) {
      const counter = countingState(ctx);
      const events = new EventWaiter();
      const stop = watchAnchorEvents(events);
      const { tasks, lifecycle } = await anchorTasks(counter.state, env, {
        "journal@v1": (input, step: AnchorStep) => stepsThenNap(input as { n: number }, step),
      });
      try {
        return await measure({
          counter,
          events,
          start: (n) => tasks.run("journal@v1", { n }),
          wake: () => lifecycle.alarm(),
        });
      } finally {
        stop();
      }
    },
  },
};
