import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isTasksError } from "../src/index";
import { freshFixture, inFixture, makeDue, sleep } from "./helpers";

const codeOf = (code: string) => (error: unknown) => isTasksError(error, code as never);

describe("restart from a step", () => {
  it("keeps the steps before it, runs it and every later step once more, and keeps what it dropped", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("steps@v1", { n: 5 });
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed", result: 10 });
      const before = fixture.tasks.steps(runId) ?? [];

      expect(await fixture.tasks.restart(runId, { from: "s2" })).toEqual({
        restart: 1,
        dropped: 3,
      });
      expect(await fixture.settled(runId)).toMatchObject({
        state: "completed",
        result: 10,
        attempt: 2,
      });
      // Steps 1–2 were not run again; steps 3–5 ran once more.
      expect(fixture.executions()).toEqual({ s0: 1, s1: 1, s2: 2, s3: 2, s4: 2 });
      expect(fixture.tasks.steps(runId)?.map((s) => s.name)).toEqual([
        "s0",
        "s1",
        "s2",
        "s3",
        "s4",
      ]);

      const [restart] = fixture.tasks.restarts(runId) ?? [];
      expect(restart).toMatchObject({ restart: 1, from: "s2", attempt: 1, state: "completed" });
      expect(restart?.steps).toEqual(before.slice(2));
      // The attempt that completed the run before the restart stays in its timeline.
      expect(fixture.tasks.attempts(runId)?.map((a) => [a.attempt, a.outcome])).toEqual([
        [1, "completed"],
        [2, "completed"],
      ]);
      // Deleting the run deletes what its restarts kept.
      const left = (state: DurableObjectState) =>
        state.storage.sql
          .exec<{ n: number }>(
            "SELECT (SELECT count(*) FROM dk_tasks_restarts) + (SELECT count(*) FROM dk_tasks_dropped_steps) AS n",
          )
          .one().n;
      expect(left(fixture.counter.state)).toBe(4);
      expect(fixture.tasks.delete({ state: ["completed"] })).toBe(1);
      expect(left(fixture.counter.state)).toBe(0);
      expect(fixture.events.filter((e) => e.type === "task:restarted")).toEqual([
        {
          type: "task:restarted",
          runId,
          definition: "steps@v1",
          from: "s2",
          restart: 1,
          dropped: 3,
        },
      ]);
    });
  });

  it("gives a failed run a second chance from the step that failed, forgetting its error", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("fatal@v1");
      expect(await fixture.settled(runId)).toMatchObject({ state: "failed" });
      let fixed = false;
      const tasks = fixture.build({
        ...fixture.definitions(),
        "fatal@v1": async (_input: undefined, step) => {
          await step.do("doomed", () => {
            fixture.bump("doomed");
            if (!fixed) throw new Error("still broken");
            return "paid";
          });
          return step.do("unreached", () => fixture.bump("unreached"));
        },
      });
      fixed = true;
      expect(await tasks.restart(runId, { from: "doomed" })).toEqual({ restart: 1, dropped: 1 });
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({ state: "completed", result: 1 });
      expect(done).not.toHaveProperty("error");
      expect(fixture.executions()).toEqual({ doomed: 2, unreached: 1 });
      expect(tasks.restarts(runId)?.[0]).toMatchObject({
        state: "failed",
        steps: [{ name: "doomed", state: "failed", error: { message: "the card was declined" } }],
      });
    });
  });

  it("restarts a parked run and a paused one, and runs the second restart's steps from the first's journal", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("steps@v1", { n: 3, sleepMs: 60_000 });
      await fixture.until(runId, (s) => s === "waiting");
      expect(await fixture.tasks.restart(runId, { from: "s1" })).toEqual({
        restart: 1,
        dropped: 3,
      });
      await fixture.until(runId, (s) => s === "waiting");
      expect(await fixture.tasks.pause(runId)).toBe(true);
      expect(await fixture.tasks.restart(runId, { from: "s2" })).toEqual({
        restart: 2,
        dropped: 2,
      });
      await fixture.until(runId, (s) => s === "waiting");
      expect(fixture.executions()).toEqual({ s0: 1, s1: 2, s2: 3 });
      expect(fixture.tasks.restarts(runId)?.map((r) => [r.restart, r.from, r.state])).toEqual([
        [1, "s1", "waiting"],
        [2, "s2", "paused"],
      ]);
    });
  });

  it("refuses what it cannot do with a coded error, and changes nothing", async () => {
    await inFixture(async (fixture) => {
      let release: () => void = () => {};
      const tasks = fixture.build({
        "held@v1": async (_input: undefined, step) => {
          await step.do("first", () => 1);
          await step.do("slow", () => new Promise<void>((resolve) => (release = resolve)));
        },
      });
      const { runId } = await tasks.run("held@v1");
      await sleep(5);
      await expect(tasks.restart(runId, { from: "first" })).rejects.toSatisfy(
        (e) => codeOf("tasks/conflict")(e) && /pause it/.test(String(e)),
      );
      await expect(tasks.restart("nobody", { from: "first" })).rejects.toSatisfy(
        codeOf("tasks/not-found"),
      );
      for (const options of [undefined, null, {}, { from: 3 }, { from: "" }]) {
        await expect(tasks.restart(runId, options as never)).rejects.toSatisfy(
          codeOf("tasks/invalid-argument"),
        );
      }
      release();
      await fixture.settled(runId, tasks);
      await expect(tasks.restart(runId, { from: "never-ran" })).rejects.toSatisfy(
        (e) => codeOf("tasks/not-found")(e) && /no journaled step "never-ran"/.test(String(e)),
      );
      await expect(tasks.handle("held@v1").restart("nobody", { from: "first" })).rejects.toSatisfy(
        codeOf("tasks/not-found"),
      );
      expect(tasks.restarts(runId)).toEqual([]);
      expect(tasks.get(runId)).toMatchObject({ state: "completed", attempt: 1 });
      expect(tasks.restarts("nobody")).toBeNull();
    });
  });
});

describe("what a restart writes (SQLite cursor counters, index writes included)", () => {
  it("writes two rows per dropped step and nothing per kept step", async () => {
    await inFixture(async (fixture) => {
      const restartCost = async (n: number, from: number) => {
        const { runId } = await fixture.tasks.run("steps@v1", { n });
        await fixture.settled(runId);
        fixture.manualWakes = true;
        const mark = fixture.counter.mark();
        // The restart alone: its attempt is started by the call, so count up to the claim.
        const done = await fixture.tasks.restart(runId, { from: `s${from}` });
        const writes = fixture.counter.log.slice(mark);
        const claim = writes.findIndex((entry) => /SET state = 'running'/.test(entry.query));
        const rows = writes
          .slice(0, claim === -1 ? writes.length : claim)
          .reduce((sum, entry) => sum + entry.cursor.rowsWritten, 0);
        await fixture.settled(runId);
        return { rows, dropped: done.dropped };
      };
      const longKept = await restartCost(10, 8);
      const shortKept = await restartCost(4, 2);
      const manyDropped = await restartCost(10, 3);
      expect([longKept.dropped, shortKept.dropped, manyDropped.dropped]).toEqual([2, 2, 7]);
      // 8 kept steps cost what 2 do; 5 more dropped steps cost 10 more rows.
      expect(longKept.rows).toBe(shortKept.rows);
      expect(manyDropped.rows - longKept.rows).toBe(10);
    });
  });
});

describe("a restart across a restart of the object", { timeout: 20_000 }, () => {
  it("is durable once it answers: the object dies after it, and the run goes on from the restarted journal", async () => {
    let stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 60_000 });
      await fixture.until(runId, (s) => s === "waiting");
      expect(await fixture.tasks.restart(runId, { from: "before" })).toEqual({
        restart: 1,
        dropped: 2,
      });
      await fixture.until(runId, (s) => s === "waiting");
      return runId;
    }, stub);
    await abortAllDurableObjects();
    stub = env.FIXTURE.get(stub.id);
    await inFixture(async (fixture, state) => {
      expect(fixture.tasks.get(runId)).toMatchObject({ state: "waiting", attempt: 2 });
      expect(fixture.tasks.restarts(runId)?.map((r) => r.steps.map((s) => s.name))).toEqual([
        ["before", "nap"],
      ]);
      expect(fixture.executions()).toEqual({ before: 2 });
      // The sleep's deadline passes (its row and the run's wake), as a minute would.
      state.storage.sql.exec(
        "UPDATE dk_tasks_steps SET wake_at = ? WHERE run_id = ? AND name = 'nap'",
        Date.now(),
        runId,
      );
      makeDue(state, runId);
    }, stub);
    await runDurableObjectAlarm(stub);
    await inFixture(async (fixture) => {
      expect(await fixture.settled(runId)).toMatchObject({ state: "completed", result: "woke" });
      expect(fixture.executions()).toEqual({ before: 2, after: 1 });
    }, stub);
  });
});
