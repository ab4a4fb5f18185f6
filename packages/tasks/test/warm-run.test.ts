import { describe, expect, it, vi } from "vitest";
import { inFixture } from "./helpers";

describe("a warm run", () => {
  it("completes with journaled steps and emits the exact event order", async () => {
    await inFixture(async (fixture) => {
      const receipt = await fixture.tasks.run("steps@v1", { n: 2 });
      expect(receipt).toMatchObject({ definition: "steps@v1", accepted: true, state: "running" });
      const done = await fixture.settled(receipt.runId);
      expect(done).toMatchObject({ state: "completed", result: 1, attempt: 1 });
      const steps = fixture.tasks.steps(receipt.runId) ?? [];
      expect(steps).toEqual([
        {
          name: "s0",
          kind: "do",
          state: "completed",
          attempt: 1,
          result: 0,
          updatedAt: expect.any(Number),
        },
        {
          name: "s1",
          kind: "do",
          state: "completed",
          attempt: 1,
          result: 1,
          updatedAt: expect.any(Number),
        },
      ]);
      // Each step's row is written when it settles: in order, within the run's life.
      expect(steps[0]?.updatedAt).toBeGreaterThanOrEqual(done.createdAt);
      expect(steps[1]?.updatedAt).toBeGreaterThanOrEqual(steps[0]?.updatedAt ?? Infinity);
      expect(steps[1]?.updatedAt).toBeLessThanOrEqual(done.updatedAt);
      expect(fixture.executions()).toEqual({ s0: 1, s1: 1 });
      const ref = { runId: receipt.runId, definition: "steps@v1" };
      expect(fixture.events).toEqual([
        { type: "task:accepted", ...ref },
        { type: "task:attempt:started", ...ref, attempt: 1 },
        { type: "task:step:started", ...ref, step: "s0", attempt: 1 },
        { type: "task:step:completed", ...ref, step: "s0", attempt: 1 },
        { type: "task:step:started", ...ref, step: "s1", attempt: 1 },
        { type: "task:step:completed", ...ref, step: "s1", attempt: 1 },
        { type: "task:completed", ...ref },
      ]);
    });
  });

  it("finishes the run when the onEvent listener throws, reporting it with console.warn", async () => {
    await inFixture(async (fixture) => {
      const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
      try {
        const tasks = fixture.build(fixture.definitions(), {
          onEvent: () => {
            throw new Error("listener bug");
          },
        });
        const { runId } = await tasks.run("steps@v1", { n: 2 });
        expect(await fixture.settled(runId, tasks)).toMatchObject({
          state: "completed",
          result: 1,
        });
        expect(warn).toHaveBeenCalledWith(
          expect.stringContaining("@durablekit/tasks"),
          expect.objectContaining({ message: "listener bug" }),
        );
      } finally {
        warn.mockRestore();
      }
    });
  });
});
