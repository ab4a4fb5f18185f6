import { describe, expect, it } from "vitest";
import { isTasksError } from "../src/index";
import { inFixture } from "./helpers";

const TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("a run's trace context (run(…, { trace }))", () => {
  it("keeps the traceparent with the run and hands it to every attempt's started event", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("flaky@v1", { failures: 1 }, { trace: TRACE });
      await fixture.settled(runId);
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "completed", trace: TRACE });
      const started = fixture.events.filter(
        (event) => event.type === "task:attempt:started" && event.runId === runId,
      );
      // The retry is a second attempt, under the same trace.
      expect(started).toEqual([
        { type: "task:attempt:started", runId, definition: "flaky@v1", attempt: 1, trace: TRACE },
        { type: "task:attempt:started", runId, definition: "flaky@v1", attempt: 2, trace: TRACE },
      ]);
      // A run started without one has none.
      const plain = (await fixture.tasks.run("steps@v1", { n: 1 })).runId;
      await fixture.settled(plain);
      expect(fixture.tasks.get(plain)?.trace).toBeUndefined();
    });
  });

  it("refuses a trace that is not a W3C traceparent, and accepts nothing of the run", async () => {
    await inFixture(async (fixture) => {
      const bad = [
        "nope",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        7,
      ];
      for (const trace of bad) {
        await expect(
          fixture.tasks.run("steps@v1", { n: 1 }, { runId: "traced", trace: trace as string }),
        ).rejects.toSatisfy((error) => isTasksError(error, "tasks/invalid-argument"));
      }
      expect(fixture.tasks.get("traced")).toBeNull();
    });
  });
});
