import { describe, expect, it } from "vitest";
import { isTasksError, type TaskStep, type TaskTriggerInput } from "../src/index";
import type { Fixture } from "./fixtures/worker";
import { crashAndWake, freshFixture, inFixture } from "./helpers";

/** A definition that records each batch it takes (a step, so a replay records it once). */
const batches = (fixture: Fixture) => ({
  "batch@v1": async (input: TaskTriggerInput, step: TaskStep) =>
    step.do("take", () => {
      fixture.note(input);
      return input.to - input.from;
    }),
  "gather@v1": {
    handler: async (input: TaskTriggerInput) => input.to,
    debounce: { periodMs: 100 },
  },
});

const rows = (state: DurableObjectState, sql: string) =>
  state.storage.sql.exec<{ n: number }>(sql).one().n;

describe("trigger(): one run per batch of a source", () => {
  it("starts a run per new batch, none for a batch delivered again, and never takes a position twice", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build(batches(fixture));
      const first = await tasks.trigger("batch@v1", { source: "orders", from: 0, to: 5 });
      expect(first).toMatchObject({
        runId: "batch@v1:orders@5",
        accepted: true,
        joinedBy: null,
        from: 0,
        to: 5,
      });
      await fixture.settled(first.runId, tasks);
      // The same batch again (a retry after a lost answer): nothing new.
      const again = await tasks.trigger("batch@v1", { source: "orders", from: 0, to: 5 });
      expect(again).toMatchObject({ runId: first.runId, accepted: false, joinedBy: "trigger" });
      // A batch that ends earlier (a stale redelivery): nothing new either.
      const stale = await tasks.trigger("batch@v1", { source: "orders", from: 0, to: 3 });
      expect(stale).toMatchObject({ runId: first.runId, accepted: false, joinedBy: "trigger" });
      // A redelivery after more data came: it starts where the last run ended.
      const overlap = await tasks.trigger("batch@v1", { source: "orders", from: 0, to: 8 });
      expect(overlap).toMatchObject({ accepted: true, from: 5, to: 8 });
      await fixture.settled(overlap.runId, tasks);
      // Another source has its own position.
      const other = await tasks.trigger("batch@v1", { source: "refunds", from: 0, to: 2 });
      await fixture.settled(other.runId, tasks);
      expect(fixture.notes()).toEqual([
        { source: "orders", from: 0, to: 5 },
        { source: "orders", from: 5, to: 8 },
        { source: "refunds", from: 0, to: 2 },
      ]);
      expect(rows(state, "SELECT count(*) AS n FROM dk_tasks_runs")).toBe(3);
      expect(rows(state, "SELECT count(*) AS n FROM dk_tasks_triggers")).toBe(2);
    });
  });

  it("refuses a malformed batch, a named run and a debounced definition, writing nothing", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build(batches(fixture));
      const bad: unknown[] = [
        undefined,
        { source: "", from: 0, to: 1 },
        { source: "x".repeat(201), from: 0, to: 1 },
        { source: "s", from: -1, to: 1 },
        { source: "s", from: 3, to: 3 },
        { source: "s", from: 0, to: 1.5 },
        { source: "s\uD800", from: 0, to: 1 },
      ];
      for (const batch of bad) {
        const error = await tasks
          .trigger("batch@v1", batch as TaskTriggerInput)
          .catch((caught: unknown) => caught);
        expect(isTasksError(error, "tasks/invalid-argument")).toBe(true);
      }
      const named = await tasks
        .trigger("batch@v1", { source: "s", from: 0, to: 1 }, { runId: "mine" } as never)
        .catch((caught: unknown) => caught);
      expect(isTasksError(named, "tasks/invalid-argument")).toBe(true);
      const debounced = await tasks
        .trigger("gather@v1", { source: "s", from: 0, to: 1 })
        .catch((caught: unknown) => caught);
      expect(isTasksError(debounced, "tasks/invalid-argument")).toBe(true);
      expect((debounced as Error).message).toContain("debounce");
      expect(rows(state, "SELECT count(*) AS n FROM dk_tasks_runs")).toBe(0);
      expect(rows(state, "SELECT count(*) AS n FROM dk_tasks_triggers")).toBe(0);
    });
  });

  it("keeps the trigger through a crash after the run was accepted: the run finishes once, the batch again starts nothing", async () => {
    let stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const tasks = fixture.build(batches(fixture));
      return (await tasks.trigger("batch@v1", { source: "orders", from: 0, to: 4 })).runId;
    }, stub);
    stub = await crashAndWake(stub);
    await inFixture(async (fixture) => {
      const tasks = fixture.build(batches(fixture));
      await fixture.settled(runId, tasks);
      const again = await tasks.trigger("batch@v1", { source: "orders", from: 0, to: 4 });
      expect(again).toMatchObject({ runId, accepted: false, joinedBy: "trigger" });
      expect(fixture.notes()).toEqual([{ source: "orders", from: 0, to: 4 }]);
    }, stub);
  });
});
