import { describe, expect, it } from "vitest";
import { inFixture } from "./helpers";

describe("history()", () => {
  it("reads a run's snapshot, its decoded input and its journal together", async () => {
    await inFixture(async (fixture) => {
      const when = new Date(1_700_000_000_000);
      const tasks = fixture.build({
        "history@v1": async (input: { n: number; when: Date }, step) => {
          const doubled = await step.do("double", () => input.n * 2);
          await step.sleep("nap", 0);
          return { doubled, year: input.when.getUTCFullYear() };
        },
      });
      const { runId } = await tasks.run("history@v1", { n: 21, when });
      await fixture.settled(runId, tasks);
      const history = tasks.history(runId);
      expect(history).toMatchObject({
        run: { runId, state: "completed", result: { doubled: 42, year: 2023 } },
        input: { n: 21, when },
        steps: [
          { name: "double", kind: "do", state: "completed", result: 42 },
          { name: "nap", kind: "sleep", state: "completed" },
        ],
      });
      // The input keeps its codec types (a Date comes back a Date).
      expect((history?.input as { when?: unknown } | undefined)?.when).toBeInstanceOf(Date);
      expect(history?.steps).toEqual(tasks.steps(runId));
      expect(tasks.history("no-such-run")).toBeNull();
      expect(() => tasks.history("")).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
    });
  });
});
