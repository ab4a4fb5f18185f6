import { describe, expect, it } from "vitest";
import { replayRecordedRun, type TaskStep } from "../src/index";
import { inFixture, makeDue } from "./helpers";

/**
 * replayRecordedRun drives a handler with the engine's own ReplayStep over a recorded history: the
 * same hits, divergences and version decisions as an attempt, and nothing run or written.
 */
describe("replayRecordedRun", () => {
  const v1 = (bump: (name: string) => void) => ({
    "order@v1": async (_input: undefined, step: TaskStep) => {
      await step.do("price", () => {
        bump("price");
        return 42;
      });
      await step.sleep("hold", 60_000);
      return step.do("ship", () => "shipped");
    },
  });

  it("stops where the engine goes live, runs no callback, and meets a changed step as the engine then does", async () => {
    await inFixture(async (fixture, state) => {
      const bump = (name: string) => fixture.bump(name);
      const tasks = fixture.build(v1(bump));
      const { runId } = await tasks.run("order@v1");
      await fixture.until(runId, (s) => s === "waiting");
      const history = tasks.history(runId);
      if (history === null) throw new Error("no history");
      const recorded = { runId, definition: "order@v1", steps: history.steps };

      // The code that recorded it: replayed up to the sleep it waits on.
      const same = await replayRecordedRun(v1(bump)["order@v1"], undefined, recorded);
      expect(same).toEqual({
        outcome: { kind: "live", step: "hold", recorded: true },
        replayed: 2,
        unreached: [],
      });

      // Behind a version marker the run keeps its branch (0: it predates the marker).
      const seen: number[] = [];
      const marked = await replayRecordedRun(
        async (_input: undefined, step: TaskStep) => {
          await step.do("price", () => 42);
          const version = await step.version("check", 1);
          seen.push(version);
          if (version >= 1) await step.do("hold", () => "checked");
          else await step.sleep("hold", 60_000);
        },
        undefined,
        recorded,
      );
      expect(seen).toEqual([0]);
      expect(marked.outcome).toEqual({ kind: "live", step: "hold", recorded: true });

      // Without one: the engine's own error, the same message the run then fails with.
      const changed = async (_input: undefined, step: TaskStep) => {
        await step.do("price", () => 42);
        await step.do("hold", () => "checked");
        return step.do("ship", () => "checked and shipped");
      };
      const replay = await replayRecordedRun(changed, undefined, recorded);
      expect(replay.outcome).toMatchObject({ kind: "fatal", step: "hold" });
      expect(fixture.executions()).toEqual({ price: 1 });

      const deployed = fixture.build({ "order@v1": changed });
      makeDue(state, runId);
      await fixture.alarm();
      const run = await fixture.settled(runId, deployed);
      expect(run).toMatchObject({ state: "failed", error: { code: "tasks/diverged" } });
      if (run.state === "failed" && replay.outcome.kind === "fatal") {
        expect(run.error.message).toBe(replay.outcome.error.message);
      }
    });
  });

  it("reports recorded steps the handler never reached, and new ground after the last one", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build(v1(() => {}));
      const { runId } = await tasks.run("order@v1");
      await fixture.until(runId, (s) => s === "waiting");
      const steps = tasks.steps(runId) ?? [];
      const recorded = { runId, definition: "order@v1", steps };

      const skipped = await replayRecordedRun(async () => "done", undefined, recorded);
      expect(skipped).toEqual({
        outcome: { kind: "completed", value: "done" },
        replayed: 0,
        unreached: [
          { name: "price", kind: "do" },
          { name: "hold", kind: "sleep" },
        ],
      });

      const renamed = await replayRecordedRun(
        async (_input: undefined, step: TaskStep) => step.do("quote", () => 42),
        undefined,
        recorded,
      );
      expect(renamed.outcome).toEqual({ kind: "live", step: "quote", recorded: false });
      expect(renamed.unreached.map((s) => s.name)).toEqual(["price", "hold"]);
    });
  });
});
