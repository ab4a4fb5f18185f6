import { describe, expect, it } from "vitest";
import type { Fixture } from "./fixtures/worker";
import { inFixture, sleep } from "./helpers";

const STEPS = /dk_tasks_steps/;
/** Statements that write the run table (the step upsert only reads it, in its fence). */
const RUN_WRITES = /^\s*(UPDATE|INSERT INTO|DELETE FROM) dk_tasks_runs/;

/** Rows the engine wrote for one whole run of `n` trivial steps, from acceptance to settle. */
async function liveRun(fixture: Fixture, n: number) {
  const mark = fixture.counter.mark();
  const { runId } = await fixture.tasks.run("steps@v1", { n });
  await fixture.settled(runId);
  return {
    total: fixture.counter.counts(mark).rowsWritten,
    journal: fixture.counter.counts(mark, STEPS).rowsWritten,
    runRowStatements: fixture.counter.log
      .slice(mark)
      .filter((entry) => RUN_WRITES.test(entry.query) && entry.cursor.rowsWritten > 0).length,
  };
}

/** Rows written and journal statements of the replay attempt of an `n`-step run that slept. */
async function replayRun(fixture: Fixture, n: number) {
  // Manual wakes: only this test's explicit alarm() call may start the replay attempt.
  fixture.manualWakes = true;
  const tasks = fixture.build(fixture.definitions());
  const { runId } = await tasks.run("steps@v1", { n, sleepMs: 20 });
  await fixture.until(runId, (state) => state === "waiting");
  await sleep(25);
  const mark = fixture.counter.mark();
  await tasks.alarm();
  expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed", attempt: 2 });
  return {
    total: fixture.counter.counts(mark).rowsWritten,
    journal: fixture.counter.counts(mark, STEPS).rowsWritten,
    journalStatements: fixture.counter.statements(mark, STEPS),
  };
}

describe("storage cost (SQLite cursor counters, index writes included)", () => {
  it("writes one row per completed step and never touches the run row per step", async () => {
    await inFixture(async (fixture) => {
      const small = await liveRun(fixture, 10);
      const large = await liveRun(fixture, 110);
      // The marginal cost of a step is exactly one row written.
      expect((large.total - small.total) / 100).toBe(1);
      // Journal rows: exactly one per step. A callback that returns synchronously needs no
      // in-flight marker: its completed row is written in the turn it started.
      expect(small.journal).toBe(10);
      expect(large.journal).toBe(110);
      // Run-row writes are per run (accept, claim, settle), the same for 10 and 110 steps.
      expect(large.runRowStatements).toBe(small.runRowStatements);
      expect(small.runRowStatements).toBe(3);
      expect(fixture.executions().s109).toBe(1);
    });
  });

  it("writes nothing for a replayed step and loads the journal in one query", async () => {
    await inFixture(async (fixture) => {
      const small = await replayRun(fixture, 10);
      const large = await replayRun(fixture, 100);
      expect(small.journal).toBe(0);
      expect(large.journal).toBe(0);
      // Claim and settle of the replay attempt: independent of the number of replayed steps.
      expect(large.total).toBe(small.total);
      expect(large.journalStatements).toHaveLength(1);
      expect(large.journalStatements[0]).toMatch(
        /^\s*SELECT .* FROM dk_tasks_steps WHERE run_id = \?/s,
      );
      // Each step ran once, on the first attempt.
      expect(fixture.executions().s99).toBe(1);
    });
  });
});

/**
 * Rows and commits of the journal for a run of `n` steps whose callbacks await I/O (or, with `io`
 * false, return synchronously). Writes made in
 * one turn (no await between them) are one implicit commit; the only turns this run starts after
 * its first are the ones each callback's I/O resumes in, which the callback numbers. The distinct
 * turns that wrote journal rows are the journal's commits.
 */
async function ioRun(fixture: Fixture, n: number, io = true) {
  let turn = 0;
  const turns: { turn: number; logAt: number }[] = [];
  const tasks = fixture.build(
    {
      "io@v1": async (_input: undefined, step) => {
        for (let i = 0; i < n; i++) {
          await step.do(
            `io${i}`,
            io
              ? async () => {
                  await sleep(2);
                  turn++;
                  return i;
                }
              : () => i,
          );
        }
      },
    },
    {
      now: () => {
        turns.push({ turn, logAt: fixture.counter.log.length });
        return Date.now();
      },
    },
  );
  const mark = fixture.counter.mark();
  const { runId } = await tasks.run("io@v1");
  await fixture.settled(runId, tasks);
  const commits = new Set<number>();
  fixture.counter.log.forEach((entry, index) => {
    if (index < mark || !STEPS.test(entry.query) || entry.cursor.rowsWritten === 0) return;
    const at = turns.filter((t) => t.logAt <= index).at(-1);
    if (at) commits.add(at.turn);
  });
  return { journal: fixture.counter.counts(mark, STEPS).rowsWritten, commits: commits.size };
}

describe("storage cost of steps that await I/O", () => {
  it("writes two journal rows per step (as agents does) and commits once per step boundary", async () => {
    await inFixture(async (fixture) => {
      const small = await ioRun(fixture, 5);
      const large = await ioRun(fixture, 25);
      // A running row when the callback starts awaiting, the completed row when it returns.
      expect((large.journal - small.journal) / 20).toBe(2);
      // One turn writes both a step's completed row and the next step's running row.
      expect((large.commits - small.commits) / 20).toBe(1);
      expect(small.commits).toBe(6);
    });
  });

  it("commits a run of synchronous steps with the turn that runs them: one row per step, no commit of its own", async () => {
    await inFixture(async (fixture) => {
      const small = await ioRun(fixture, 5, false);
      const large = await ioRun(fixture, 25, false);
      expect((large.journal - small.journal) / 20).toBe(1);
      expect(large.commits).toBe(1);
    });
  });
});

describe("large journals", () => {
  it("replays a journal of many megabytes of step results", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "big@v1": async (_input: undefined, step) => {
          const lengths: number[] = [];
          for (let i = 0; i < 24; i++) {
            const text = await step.do(`big-${i}`, () => `${i}:${"x".repeat(900_000)}`);
            lengths.push(text.length);
          }
          await step.sleep("nap", 10);
          return lengths.reduce((sum, length) => sum + length, 0);
        },
      });
      fixture.manualWakes = true;
      const { runId } = await tasks.run("big@v1");
      await fixture.until(runId, (state) => state === "waiting", 20_000);
      await sleep(15);
      const mark = fixture.counter.mark();
      await tasks.alarm();
      const done = await fixture.settled(runId, tasks, 20_000);
      // About 21.6 MB of step results, more than one SQLite string may hold: the journal is
      // streamed row by row, still in one query, and nothing is written for the replayed steps.
      expect(done).toMatchObject({ state: "completed", result: 24 * 900_002 + 14 });
      expect(fixture.counter.counts(mark, STEPS).rowsWritten).toBe(0);
      expect(fixture.counter.statements(mark, STEPS)).toHaveLength(1);
    });
  }, 60_000);
});
