import { describe, expect, it } from "vitest";
import type { TaskStep } from "../src/index";
import { inFixture, makeDue } from "./helpers";

/** Moves a journaled sleep's deadline to the past, as time passing would (test-only reach into the table). */
function sleptOut(state: DurableObjectState, runId: string, name: string): void {
  state.storage.sql.exec(
    "UPDATE dk_tasks_steps SET wake_at = 0 WHERE run_id = ? AND name = ?",
    runId,
    name,
  );
  makeDue(state, runId);
}

/**
 * The deploy the tests make: v1 waits out a sleep named "hold" before it ships; the new code checks
 * the order at "hold" instead (a `do` step at the name a sleep was journaled under). Runs recorded
 * by v1 must keep the old branch, new runs take the new one.
 */
describe("version markers (step.version)", () => {
  const v1 = (bump: (name: string) => void) => ({
    "order@v1": async (_input: undefined, step: TaskStep) => {
      await step.do("price", () => {
        bump("price");
        return 42;
      });
      await step.sleep("hold", 60_000);
      return step.do("ship", () => {
        bump("ship");
        return "shipped";
      });
    },
  });

  const v2 = (bump: (name: string) => void, seen: number[]) => ({
    "order@v1": async (_input: undefined, step: TaskStep) => {
      await step.do("price", () => {
        bump("price");
        return 42;
      });
      const version = await step.version("check-instead-of-hold", 1);
      seen.push(version);
      if (version >= 1) {
        await step.do("hold", () => {
          bump("check");
          return "checked";
        });
      } else {
        await step.sleep("hold", 60_000);
      }
      return step.do("ship", () => {
        bump("ship");
        return version >= 1 ? "checked and shipped" : "shipped";
      });
    },
  });

  it("fails an in-flight run with tasks/diverged when the step changes without a marker", async () => {
    await inFixture(async (fixture, state) => {
      const bump = (name: string) => fixture.bump(name);
      const old = fixture.build(v1(bump));
      const { runId } = await old.run("order@v1");
      await fixture.until(runId, (s) => s === "waiting");
      // The same change, deployed without a marker.
      const unmarked = fixture.build({
        "order@v1": async (_input: undefined, step: TaskStep) => {
          await step.do("price", () => 42);
          await step.do("hold", () => bump("check"));
          return step.do("ship", () => "checked and shipped");
        },
      });
      makeDue(state, runId);
      await fixture.alarm();
      expect(await fixture.settled(runId, unmarked)).toMatchObject({
        state: "failed",
        error: { code: "tasks/diverged" },
      });
      expect(fixture.executions()).toEqual({ price: 1 });
    });
  });

  it("replays a run recorded before the marker down the old branch, and records 0 for it", async () => {
    await inFixture(async (fixture, state) => {
      const bump = (name: string) => fixture.bump(name);
      const old = fixture.build(v1(bump));
      const { runId } = await old.run("order@v1");
      await fixture.until(runId, (s) => s === "waiting");

      const seen: number[] = [];
      const next = fixture.build(v2(bump, seen));
      sleptOut(state, runId, "hold");
      await fixture.alarm();
      expect(await fixture.settled(runId, next)).toMatchObject({
        state: "completed",
        result: "shipped",
      });
      expect(seen).toEqual([0]);
      expect(fixture.executions()).toEqual({ price: 1, ship: 1 });
      const at = expect.any(Number);
      expect(next.steps(runId)).toEqual([
        { name: "price", kind: "do", state: "completed", attempt: 1, result: 42, updatedAt: at },
        expect.objectContaining({ name: "hold", kind: "sleep", state: "completed" }),
        {
          name: "check-instead-of-hold",
          kind: "version",
          state: "completed",
          attempt: 0,
          result: 0,
          updatedAt: at,
        },
        {
          name: "ship",
          kind: "do",
          state: "completed",
          attempt: 1,
          result: "shipped",
          updatedAt: at,
        },
      ]);
    });
  });

  it("takes the new branch on a new run and keeps its recorded version on every replay", async () => {
    await inFixture(async (fixture, state) => {
      const seen: number[] = [];
      const bump = (name: string) => fixture.bump(name);
      const next = fixture.build(v2(bump, seen));
      const { runId } = await next.run("order@v1");
      expect(await fixture.settled(runId, next)).toMatchObject({
        state: "completed",
        result: "checked and shipped",
      });
      expect(seen).toEqual([1]);
      expect(fixture.executions()).toEqual({ price: 1, check: 1, ship: 1 });
      expect(next.steps(runId)?.map((s) => [s.name, s.kind, s.result])).toEqual([
        ["price", "do", 42],
        ["check-instead-of-hold", "version", 1],
        ["hold", "do", "checked"],
        ["ship", "do", "checked and shipped"],
      ]);

      // A later deploy raises the marker to 2: a run parked under version 1 keeps its answer.
      const parkedSeen: number[] = [];
      const parking = fixture.build({
        "order@v1": async (_input: undefined, step: TaskStep) => {
          parkedSeen.push(await step.version("check-instead-of-hold", 1));
          await step.sleep("nap", 60_000);
          return "woke";
        },
      });
      const parked = await parking.run("order@v1");
      await fixture.until(parked.runId, (s) => s === "waiting");
      const raised = fixture.build({
        "order@v1": async (_input: undefined, step: TaskStep) => {
          parkedSeen.push(await step.version("check-instead-of-hold", 2));
          await step.sleep("nap", 60_000);
          return "woke";
        },
      });
      sleptOut(state, parked.runId, "nap");
      await fixture.alarm();
      expect(await fixture.settled(parked.runId, raised)).toMatchObject({ state: "completed" });
      expect(parkedSeen).toEqual([1, 1]);
    });
  });

  it("refuses a bad marker name or version before writing anything", async () => {
    await inFixture(async (fixture) => {
      const errors: unknown[] = [];
      const tasks = fixture.build({
        "bad@v1": async (_input: undefined, step: TaskStep) => {
          for (const [name, latest] of [
            ["", 1],
            ["__dk-x", 1],
            ["ok", 0],
            ["ok", 1.5],
          ] as const) {
            await step.version(name, latest).catch((error: unknown) => errors.push(error));
          }
          return "done";
        },
      });
      const { runId } = await tasks.run("bad@v1");
      expect(await fixture.settled(runId, tasks)).toMatchObject({ state: "completed" });
      expect(errors.map((error) => (error as { code?: string }).code)).toEqual([
        "tasks/invalid-argument",
        "tasks/invalid-argument",
        "tasks/invalid-argument",
        "tasks/invalid-argument",
      ]);
      expect(tasks.steps(runId)).toEqual([]);
    });
  });
});
