import { describe, expect, it } from "vitest";
import { inFixture, makeDue, sleep } from "./helpers";

describe("replay safety", () => {
  it("rejects a duplicate step name before running its callback, and fails the run even if caught", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("dupe@v1");
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({
        state: "failed",
        error: { name: "DuplicateStepError", code: "tasks/duplicate-step" },
      });
      expect(fixture.executions()).toEqual({ "x-first": 1 });
    });
  });

  it("fails visibly when a replay meets a step of another kind at a journaled name", async () => {
    await inFixture(async (fixture, state) => {
      const v1 = fixture.build({
        "shape@v1": async (_input: undefined, step) => {
          await step.do("one", () => 1);
          await step.sleep("two", 60_000);
        },
      });
      const { runId } = await v1.run("shape@v1");
      await fixture.until(runId, (s) => s === "waiting");
      // A deploy changes the handler under the same definition name.
      let ranTwo = false;
      const v2 = fixture.build({
        "shape@v1": async (_input: undefined, step) => {
          await step.do("one", () => 1);
          await step.do("two", () => {
            ranTwo = true;
          });
        },
      });
      makeDue(state, runId);
      await fixture.alarm();
      const done = await fixture.settled(runId, v2);
      expect(done).toMatchObject({
        state: "failed",
        error: { name: "ReplayDivergedError", code: "tasks/diverged" },
      });
      if (done.state === "failed") expect(done.error.message).toMatch(/journaled as a sleep step/);
      expect(ranTwo).toBe(false);
    });
  });

  it("fails visibly when a replay waits at the name of a journaled step result", async () => {
    await inFixture(async (fixture, state) => {
      const v1 = fixture.build({
        "shape@v1": async (_input: undefined, step) => {
          await step.do("one", () => 1);
          await step.do("two", () => 2);
          await step.sleep("three", 60_000);
        },
      });
      const { runId } = await v1.run("shape@v1");
      await fixture.until(runId, (s) => s === "waiting");
      // "two" is a completed step result; the new handler sleeps or waits for an event there.
      const v2 = fixture.build({
        "shape@v1": async (_input: undefined, step) => {
          await step.do("one", () => 1);
          await step.sleep("two", 1);
        },
      });
      makeDue(state, runId);
      await fixture.alarm();
      const slept = await fixture.settled(runId, v2);
      expect(slept).toMatchObject({ state: "failed", error: { code: "tasks/diverged" } });
      if (slept.state === "failed") expect(slept.error.message).toMatch(/journaled as a do step/);

      const { runId: second } = await v1.run("shape@v1");
      await fixture.until(second, (s) => s === "waiting");
      const v3 = fixture.build({
        "shape@v1": async (_input: undefined, step) => {
          await step.do("one", () => 1);
          await step.waitForEvent("two", { type: "go" });
        },
      });
      makeDue(state, second);
      await fixture.alarm();
      const waited = await fixture.settled(second, v3);
      expect(waited).toMatchObject({ state: "failed", error: { code: "tasks/diverged" } });
      if (waited.state === "failed") expect(waited.error.message).toMatch(/journaled as a do step/);
    });
  });

  it("fails a run whose definition is no longer registered and reports it", async () => {
    await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 60_000 });
      await fixture.until(runId, (s) => s === "waiting");
      const { "sleepy@v1": _removed, ...rest } = fixture.definitions();
      const after = fixture.build(rest);
      makeDue(state, runId);
      await fixture.alarm();
      expect(after.get(runId)).toMatchObject({
        state: "failed",
        error: { name: "MissingDefinitionError", code: "tasks/missing-definition" },
      });
      expect(fixture.errors.map((error) => (error as { code?: string }).code)).toEqual([
        "tasks/missing-definition",
      ]);
      // The run is kept for inspection, never deleted silently.
      expect(after.steps(runId)).toMatchObject([{ name: "before" }, { name: "nap" }]);
    });
  });

  it("suppresses status messages on replayed ground behind the live gate", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("status@v1");
      await fixture.until(runId, (s) => s === "waiting");
      expect(fixture.tasks.get(runId)).toMatchObject({ statusMessage: "two" });
      const mark = fixture.counter.mark();
      await sleep(15);
      await fixture.alarm();
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", attempt: 2 });
      // Attempt 2 replayed "one" and "two" silently; only "three" (new ground) was written.
      const writes = fixture.counter.statements(mark, /SET status_message/);
      expect(writes).toHaveLength(1);
      const statuses = fixture.counter.log
        .slice(mark)
        .filter((entry) => /SET status_message/.test(entry.query));
      expect(statuses.every((entry) => entry.cursor.rowsWritten === 1)).toBe(true);
    });
  });

  it("journals parallel steps and replays both", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("parallel@v1");
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", result: "XY", attempt: 2 });
      expect(fixture.executions()).toEqual({ x: 1, y: 1 });
    });
  });
});

describe("maxStepsPerRun", () => {
  it("fails the run with tasks/step-limit before running the step over the limit, even if caught", async () => {
    await inFixture(async (fixture) => {
      const ran: string[] = [];
      const tasks = fixture.build(
        {
          "many@v1": async (_input: undefined, step) => {
            for (let i = 0; i < 5; i++) {
              try {
                await step.do(`s${i}`, () => ran.push(`s${i}`));
              } catch {
                // Swallowing the limit does not save the run.
              }
            }
            return "swallowed";
          },
        },
        { maxStepsPerRun: 3 },
      );
      const { runId } = await tasks.run("many@v1");
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({ state: "failed", error: { code: "tasks/step-limit" } });
      expect(ran).toEqual(["s0", "s1", "s2"]);
      expect(tasks.steps(runId)?.map((step) => step.name)).toEqual(["s0", "s1", "s2"]);
    });
  });

  it("counts journaled steps of earlier attempts toward maxStepsPerRun", async () => {
    await inFixture(async (fixture) => {
      const ran: string[] = [];
      const tasks = fixture.build(
        {
          "split@v1": async (_input: undefined, step) => {
            await step.do("a", () => ran.push("a"));
            await step.sleep("nap", 10);
            await step.do("b", () => ran.push("b"));
            await step.do("c", () => ran.push("c"));
          },
        },
        { maxStepsPerRun: 3 },
      );
      const { runId } = await tasks.run("split@v1");
      const done = await fixture.settled(runId, tasks);
      // a, nap and b fill the limit across two attempts; c is the fourth step.
      expect(done).toMatchObject({
        state: "failed",
        attempt: 2,
        error: { code: "tasks/step-limit" },
      });
      expect(ran).toEqual(["a", "b"]);
    });
  });
});

describe("event-type divergence", () => {
  for (const journaled of ["waiting", "completed"] as const) {
    it(`fails with tasks/diverged when a replay waits for another event type at a ${journaled} wait`, async () => {
      await inFixture(async (fixture, state) => {
        const v1 = fixture.build({
          "gate@v1": async (_input: undefined, step) => {
            await step.waitForEvent("gate", { type: "approve" });
            await step.sleep("after", 60_000);
          },
        });
        const { runId } = await v1.run("gate@v1");
        await fixture.until(runId, (s) => s === "waiting");
        if (journaled === "completed") {
          await v1.sendEvent(runId, "approve", { by: "ada" });
          for (let i = 0; i < 100 && v1.get(runId)?.state !== "waiting"; i++) await sleep(5);
          await sleep(10);
          expect(v1.steps(runId)?.map((step) => [step.name, step.state])).toEqual([
            ["gate", "completed"],
            ["after", "waiting"],
          ]);
        }
        // A deploy changes the event type the handler waits for at the same name.
        const v2 = fixture.build({
          "gate@v1": async (_input: undefined, step) => {
            await step.waitForEvent("gate", { type: "reject" });
          },
        });
        makeDue(state, runId);
        await fixture.alarm();
        const done = await fixture.settled(runId, v2);
        expect(done).toMatchObject({ state: "failed", error: { code: "tasks/diverged" } });
        if (done.state === "failed") {
          expect(done.error.message).toMatch(/journaled waiting for "approve"/);
        }
      });
    });
  }
});
