import { describe, expect, it } from "vitest";
import { NonRetryableError, replayRecordedRun } from "../src/index";
import type { Fixture } from "./fixtures/worker";
import { crashAndWake, freshFixture, inFixture, sleep, untilExecuted } from "./helpers";

/** The three bookings' compensations, completed, last booked first: as `compensations()` reads them. */
const ALL_UNDONE = [
  ["book3", "completed"],
  ["book2", "completed"],
  ["book1", "completed"],
];

/** What the three compensations note, in the order they ran. */
const UNDONE_IN_REVERSE = [{ undone: "b3" }, { undone: "b2" }, { undone: "b1" }];

/** The compensations as `steps()` shows them, in journal order: `[step, state]`. */
function compensations(fixture: Fixture, runId: string) {
  return (fixture.tasks.steps(runId) ?? [])
    .filter((step) => step.kind === "compensation")
    .map((step) => [step.name, step.state]);
}

/** The run's event types from its stream, with the step each names. */
function eventShape(fixture: Fixture, runId: string) {
  return fixture.tasks.events
    .readPage(runId, { limit: 1000 })
    .chunks.map(({ chunk: e }) =>
      "step" in e && e.step !== null ? `${e.type} ${e.step}` : e.type,
    );
}

describe("compensation (step.do(name, { compensate }, fn))", () => {
  it("undoes the completed steps of a failed run in reverse start order, once each, and fails with its error", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", {});
      expect(await fixture.settled(runId)).toMatchObject({
        state: "failed",
        error: { name: "NonRetryableError", message: "the card was declined" },
      });
      expect(fixture.notes()).toEqual(UNDONE_IN_REVERSE);
      expect(fixture.executions()).toEqual({
        book1: 1,
        book2: 1,
        book3: 1,
        pay: 1,
        undo1: 1,
        undo2: 1,
        undo3: 1,
      });
      expect(compensations(fixture, runId)).toEqual(ALL_UNDONE);
      expect(eventShape(fixture, runId).slice(-5)).toEqual([
        "task:step:failed pay",
        "task:compensation:completed book3",
        "task:compensation:completed book2",
        "task:compensation:completed book1",
        "task:failed",
      ]);
    });
  });

  it("runs no compensation for a run that completes, and marks the run once whatever the count", async () => {
    await inFixture(async (fixture) => {
      const mark = fixture.counter.mark();
      const { runId } = await fixture.tasks.run("saga@v1", { fail: false });
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed", result: "booked" });
      expect(compensations(fixture, runId)).toEqual([]);
      expect(fixture.notes()).toEqual([]);
      // Three steps with a compensation: the run row's mark is written once, by the first.
      expect(fixture.counter.counts(mark, /SET compensable = 1/).rowsWritten).toBe(1);
      // A run whose steps have none is never marked.
      const plain = fixture.counter.mark();
      const other = await fixture.tasks.run("steps@v1", { n: 3 });
      await fixture.settled(other.runId);
      expect(fixture.counter.statements(plain, /compensable/)).toEqual([]);
    });
  });

  it("goes on after the object dies inside compensation 2: 3 is not run again, 2 runs again, then 1", async () => {
    let stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", { cut: true });
      await untilExecuted(fixture, "undo2");
      expect(fixture.executions()).toMatchObject({ undo3: 1, undo2: 1 });
      return runId;
    }, stub);
    stub = await crashAndWake(stub);
    await inFixture(async (fixture) => {
      expect(await fixture.settled(runId)).toMatchObject({
        state: "failed",
        error: { message: "the card was declined" },
        attempt: 2,
      });
      // The booked steps and the failed payment were not run again; compensation 3 completed
      // before the object died and stays done; 2 was cut, so it ran once more; 1 ran once.
      expect(fixture.executions()).toEqual({
        book1: 1,
        book2: 1,
        book3: 1,
        pay: 1,
        undo1: 1,
        undo2: 2,
        undo3: 1,
      });
      expect(fixture.notes()).toEqual(UNDONE_IN_REVERSE);
      expect(compensations(fixture, runId)).toEqual(ALL_UNDONE);
    }, stub);
  });

  it("journals a compensation that fails for good (after its step's retries) and still runs the rest", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", { brokenUndo: true });
      expect(await fixture.settled(runId)).toMatchObject({
        state: "failed",
        error: { message: "the card was declined" },
      });
      // Its step's retries: two attempts, the second after a retry park.
      expect(fixture.executions()).toMatchObject({ undo3: 1, undo2: 2, undo1: 1 });
      expect(fixture.notes()).toEqual([{ undone: "b3" }, { undone: "b1" }]);
      expect(compensations(fixture, runId)).toEqual([
        ["book3", "completed"],
        ["book2", "failed"],
        ["book1", "completed"],
      ]);
      const undo2 = (fixture.tasks.steps(runId) ?? []).find(
        (step) => step.kind === "compensation" && step.name === "book2",
      );
      expect(undo2?.error).toMatchObject({ message: "cannot cancel b2 (attempt 2)" });
      expect(eventShape(fixture, runId)).toContain("task:compensation:failed book2");
    });
  });

  it("undoes a step that was still running beside the one that failed, once it completed", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "parallel-saga@v1": async (_input: undefined, step) => {
          await Promise.all([
            step.do(
              "slow",
              { compensate: (value: string) => fixture.note({ undone: value }) },
              async () => {
                await sleep(40);
                return "slow-result";
              },
            ),
            step.do("fast-failure", () => {
              throw new NonRetryableError("refused");
            }),
          ]);
        },
      });
      const { runId } = await tasks.run("parallel-saga@v1");
      expect(await fixture.settled(runId, tasks)).toMatchObject({
        state: "failed",
        error: { message: "refused" },
      });
      expect(fixture.notes()).toEqual([{ undone: "slow-result" }]);
    });
  });

  it("refuses a compensate that is not a function, failing the step's call", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "bad@v1": async (_input: undefined, step) => {
          try {
            await step.do("x", { compensate: "refund" as never }, () => 1);
            return "ran";
          } catch (error) {
            return (error as { code?: string }).code;
          }
        },
      });
      const { runId } = await tasks.run("bad@v1");
      expect(await fixture.settled(runId, tasks)).toMatchObject({
        state: "completed",
        result: "tasks/invalid-argument",
      });
    });
  });
});

describe("compensation on cancel", () => {
  it("undoes a parked run's completed steps when it is cancelled, then settles it cancelled", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", { wait: true });
      await fixture.until(runId, (state) => state === "waiting");
      expect(await fixture.tasks.cancel(runId, "changed my mind")).toBe(true);
      expect(await fixture.settled(runId)).toMatchObject({
        state: "cancelled",
        reason: "changed my mind",
      });
      expect(fixture.notes()).toEqual(UNDONE_IN_REVERSE);
      // The bookings were replayed, not run again; the payment never ran.
      expect(fixture.executions()).toEqual({
        book1: 1,
        book2: 1,
        book3: 1,
        undo1: 1,
        undo2: 1,
        undo3: 1,
      });
      expect(compensations(fixture, runId)).toEqual(ALL_UNDONE);
      expect(eventShape(fixture, runId).slice(-4)).toEqual([
        "task:compensation:completed book3",
        "task:compensation:completed book2",
        "task:compensation:completed book1",
        "task:cancelled",
      ]);
    });
  });

  it("undoes only the steps that completed when a live attempt is cancelled mid-step", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", { slow: true });
      await untilExecuted(fixture, "book3");
      expect(await fixture.tasks.cancel(runId)).toBe(true);
      expect(await fixture.settled(runId)).toMatchObject({ state: "cancelled" });
      // The 3rd booking was cut (it never completed): nothing of it to undo.
      expect(fixture.notes()).toEqual([{ undone: "b2" }, { undone: "b1" }]);
      expect(compensations(fixture, runId)).toEqual([
        ["book2", "completed"],
        ["book1", "completed"],
      ]);
    });
  });

  it("settles a cancel at once, as before, for a run with nothing to undo", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("approval@v1", {});
      await fixture.until(runId, (state) => state === "waiting");
      await fixture.tasks.cancel(runId);
      // No attempt: the cancel settled the parked run in the call.
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "cancelled", attempt: 1 });
    });
  });

  it("goes on undoing after the object dies during a cancel's compensations", async () => {
    let stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", { wait: true, cut: true });
      await fixture.until(runId, (state) => state === "waiting");
      await fixture.tasks.cancel(runId);
      await untilExecuted(fixture, "undo2");
      expect(fixture.executions()).toMatchObject({ undo3: 1, undo2: 1 });
      return runId;
    }, stub);
    stub = await crashAndWake(stub);
    await inFixture(async (fixture) => {
      expect(await fixture.settled(runId)).toMatchObject({ state: "cancelled" });
      expect(fixture.executions()).toMatchObject({ undo3: 1, undo2: 2, undo1: 1 });
      expect(fixture.notes()).toEqual(UNDONE_IN_REVERSE);
    }, stub);
  });
});

describe("a compensated run, read back and restarted", () => {
  it("replays as recorded: compensations are the engine's, never a step the handler missed", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", {});
      await fixture.settled(runId);
      const steps = fixture.tasks.steps(runId) ?? [];
      const result = await replayRecordedRun(
        fixture.definitions()["saga@v1"] as never,
        {},
        { runId, definition: "saga@v1", steps },
      );
      expect(result.outcome).toMatchObject({
        kind: "failed",
        error: { message: "the card was declined" },
      });
      expect(result.unreached).toEqual([]);
    });
  });

  it("refuses a restart that would keep an undone step as done, and restarts from the first one undone", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("saga@v1", {});
      await fixture.settled(runId);
      await expect(fixture.tasks.restart(runId, { from: "book2" })).rejects.toMatchObject({
        code: "tasks/conflict",
        message: expect.stringContaining('Step "book1"'),
      });
      await expect(fixture.tasks.restart(runId, { from: "pay" })).rejects.toMatchObject({
        code: "tasks/conflict",
      });
      expect(await fixture.tasks.restart(runId, { from: "book1" })).toMatchObject({ restart: 1 });
      expect(await fixture.settled(runId)).toMatchObject({ state: "failed", attempt: 2 });
      // Booked again from the start, and undone again.
      expect(fixture.executions()).toMatchObject({ book1: 2, undo1: 2, undo3: 2 });
    });
  });
});
