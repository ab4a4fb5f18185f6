import { abortAllDurableObjects, env, runDurableObjectAlarm } from "cloudflare:test";
import { thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { type InspectRun, isInspectError } from "../src/index";
import type { Fixture } from "./fixtures/worker";
import { freshStub, inFixture } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isInspectError);

/** Runs `fn` inside the object of `stub`. */
const within = <T>(
  stub: DurableObjectStub<Fixture>,
  fn: (fixture: Fixture, state: DurableObjectState) => T | Promise<T>,
) => inFixture(fn, stub);

/** Runs the object's alarm (after its wake) until `done` holds for the run, or fails. */
async function driveUntil(
  stub: DurableObjectStub<Fixture>,
  runId: string,
  done: (run: InspectRun) => boolean,
): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const run = await within(stub, ({ inspector }) => inspector.run(runId)?.run);
    if (run && done(run)) return;
    await scheduler.wait(15);
    await runDurableObjectAlarm(stub);
  }
  throw new Error(`run ${runId} did not get there`);
}

describe("the inspector's task runs", () => {
  it("shows a step that failed twice then succeeded, the back-off, the sleep and the event wait", async () => {
    const stub = freshStub();
    const runId = await within(stub, async ({ tasks }) => (await tasks.run("flaky@v1")).runId);
    // The first attempt failed: the run waits for its retry, the step carries the error.
    await driveUntil(stub, runId, (run) => run.state === "waiting");
    const retrying = await within(stub, ({ inspector }) => inspector.run(runId));
    expect(retrying?.run).toMatchObject({ state: "waiting", waitingFor: "retry", attempts: 1 });
    expect(retrying?.steps).toEqual([
      expect.objectContaining({
        index: 0,
        name: "charge",
        kind: "do",
        state: "waiting",
        attempts: 1,
        error: { name: "Error", message: "card declined (try 1)" },
      }),
    ]);
    expect(retrying?.steps[0]?.wakeAt).toBe(retrying?.run.wakeAt);

    // Two retries later the charge succeeded; the run sleeps, then waits for its approval.
    await driveUntil(stub, runId, (run) => run.waitingFor === "event");
    const waiting = await within(stub, ({ inspector }) => inspector.run(runId));
    expect(waiting?.run).toMatchObject({
      state: "waiting",
      waitingFor: "event",
      eventType: "approve",
      wakeAt: null,
    });
    expect(waiting?.run.attempts).toBeGreaterThanOrEqual(3);
    expect(waiting?.steps.map((s) => [s.name, s.kind, s.state, s.attempts])).toEqual([
      ["charge", "do", "completed", 3],
      ["cool-off", "sleep", "completed", 0],
      ["approval", "event", "waiting", 0],
    ]);
    expect(waiting?.steps[0]).toMatchObject({ result: 3, error: null });
    expect(waiting?.steps[2]?.eventType).toBe("approve");
    // The steps lie end to end on the run's time axis, from its creation.
    const steps = waiting?.steps ?? [];
    expect(steps[0]?.from).toBe(waiting?.run.createdAt);
    for (let i = 1; i < steps.length; i++) {
      expect(steps[i]?.from).toBe(steps[i - 1]?.to);
      expect(steps[i]?.to).toBeGreaterThanOrEqual(steps[i]?.from ?? Infinity);
    }
    // The back-off: the charge settled no earlier than two retry delays after the run began.
    expect((steps[0]?.to ?? 0) - (steps[0]?.from ?? 0)).toBeGreaterThanOrEqual(10);

    // Its attempts: two that failed the charge (each with its error), the one that charged and
    // slept, the wake that parked at the approval; the gaps between them are the back-offs.
    expect(waiting?.attempts.map((a) => [a.attempt, a.outcome, a.step])).toEqual([
      [1, "retry", "charge"],
      [2, "retry", "charge"],
      [3, "sleep", "cool-off"],
      [4, "event", "approval"],
    ]);
    expect(waiting?.attempts.map((a) => a.error?.message ?? null)).toEqual([
      "card declined (try 1)",
      "card declined (try 2)",
      null,
      null,
    ]);
    const tries = waiting?.attempts ?? [];
    for (let i = 1; i < tries.length; i++) {
      const gap = (tries[i]?.startedAt ?? 0) - (tries[i - 1]?.endedAt ?? Infinity);
      expect(gap).toBeGreaterThanOrEqual(i < 3 ? 5 : 0);
    }

    await within(stub, ({ tasks }) => tasks.sendEvent(runId, "approve", { by: "ada" }));
    await driveUntil(stub, runId, (run) => run.state === "completed");
    const done = await within(stub, ({ inspector }) => inspector.run(runId));
    expect(done).toMatchObject({
      version: 1,
      run: { state: "completed", waitingFor: null, error: null },
      input: undefined,
      result: { tries: 3, by: "ada" },
    });
    expect(done?.run.settledAt).toBeGreaterThanOrEqual(done?.steps[2]?.to ?? Infinity);
    expect(done?.steps[2]).toMatchObject({ state: "completed", result: { by: "ada" } });
  });

  it("shows a failed run's coded error, a cancelled run and a run cut by a restart", async () => {
    let stub = freshStub();
    const ids = await within(stub, async ({ tasks }) => ({
      doomed: (await tasks.run("doomed@v1", { reason: "test" })).runId,
      cancelled: (await tasks.run("forever@v1")).runId,
    }));
    await driveUntil(stub, ids.doomed, (run) => run.state === "failed");
    const doomed = await within(stub, ({ inspector }) => inspector.run(ids.doomed));
    expect(doomed?.run).toMatchObject({
      state: "failed",
      attempts: 1,
      error: { name: "NonRetryableError", message: "out of stock" },
    });
    expect(doomed?.input).toEqual({ reason: "test" });
    expect(doomed?.attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, "failed"]]);
    expect(doomed?.steps).toEqual([
      expect.objectContaining({ name: "check", state: "failed", attempts: 1 }),
    ]);

    // The hanging step is cut by a reset; the claim deadline's alarm starts attempt 2.
    await driveUntil(stub, ids.cancelled, (run) => run.state === "running");
    await abortAllDurableObjects();
    // A stub connected to an aborted object stays broken: reach the object anew.
    stub = env.FIXTURE.get(stub.id);
    await scheduler.wait(250);
    await runDurableObjectAlarm(stub).catch(() => {});
    const cut = await within(stub, ({ inspector }) => inspector.run(ids.cancelled));
    expect(cut?.run.attempts).toBe(2);
    expect(cut?.attempts.map((a) => [a.attempt, a.outcome, a.endedAt])).toEqual([
      [1, "interrupted", null],
      [2, "running", null],
    ]);
    expect(cut?.steps.map((s) => [s.name, s.state, s.attempts])).toEqual([
      ["start", "completed", 1],
      ["hang", "running", 2],
    ]);

    await within(stub, ({ tasks }) => tasks.cancel(ids.cancelled, "not needed"));
    await driveUntil(stub, ids.cancelled, (run) => run.state === "cancelled");
    const cancelled = await within(stub, ({ inspector }) => inspector.run(ids.cancelled));
    expect(cancelled?.run).toMatchObject({
      state: "cancelled",
      error: { name: "Cancelled", message: "not needed" },
    });
    expect(cancelled?.attempts.map((a) => a.outcome)).toEqual(["interrupted", "cancelled"]);

    const overview = await within(stub, ({ inspector }) => inspector.overview());
    expect(overview.parts).toEqual(["tasks", "programs", "streams", "chat"]);
    expect(overview.runs).toMatchObject({
      byState: { failed: 1, cancelled: 1, running: 0 },
      complete: true,
    });
    const failed = await within(stub, ({ inspector }) => inspector.runs({ state: "failed" }));
    expect(failed.items.map((r) => r.runId)).toEqual([ids.doomed]);
    const forever = await within(stub, ({ inspector }) =>
      inspector.runs({ definition: "forever@v1" }),
    );
    expect(forever.items.map((r) => r.runId)).toEqual([ids.cancelled]);
  });

  it("shows queued runs with why they wait, and the schedules with their ticks", async () => {
    await inFixture(async ({ tasks, inspector }) => {
      const first = await tasks.run("one-at-a-time@v1", { customer: "acme" });
      const second = await tasks.run("one-at-a-time@v1", { customer: "acme" }, { priority: 7 });
      expect(first.state).toBe("waiting");
      expect(inspector.run(second.runId)?.run).toMatchObject({
        state: "queued",
        queuedFor: "concurrency",
        flowKey: "acme",
        priority: 7,
        wakeAt: null,
      });
      expect(inspector.run(first.runId)?.run).toMatchObject({
        queuedFor: null,
        flowKey: null,
        priority: null,
      });
      expect(inspector.runs({ state: "queued" }).items.map((run) => run.runId)).toEqual([
        second.runId,
      ]);
      const overview = inspector.overview();
      expect(overview.runs?.byState).toMatchObject({ queued: 1, waiting: 1 });
      const nextThree = new Date();
      nextThree.setUTCHours(3, 0, 0, 0);
      if (nextThree.getTime() <= Date.now()) nextThree.setUTCDate(nextThree.getUTCDate() + 1);
      expect(overview.schedules).toEqual([
        {
          scheduleId: "nightly",
          definition: "one-at-a-time@v1",
          cron: "0 3 * * *",
          timezone: "UTC",
          overlap: "skip",
          backfill: 0,
          source: "definition",
          nextTickAt: nextThree.getTime(),
          lastTickAt: null,
          lastRunId: null,
          missed: 0,
          skipped: 0,
        },
      ]);
    });
  });

  it("lists at most the first 100 schedules by id in the overview", async () => {
    await inFixture(async ({ tasks, inspector }) => {
      for (let i = 0; i < 101; i++) {
        await tasks.schedule("one-at-a-time@v1", {
          id: `s${String(i).padStart(3, "0")}`,
          cron: "@daily",
          input: { customer: `c${i}` },
        });
      }
      const shown = inspector.overview().schedules ?? [];
      expect(tasks.schedules()).toHaveLength(102);
      expect(shown).toHaveLength(100);
      expect(shown[0]?.scheduleId).toBe("nightly");
      expect(shown.at(-1)?.scheduleId).toBe("s098");
    });
  });

  it("pages runs newest first, refuses bad input, and answers null for an unknown run", async () => {
    await inFixture(async ({ tasks, inspector }) => {
      for (let i = 0; i < 5; i++) {
        await tasks.run("doomed@v1", { reason: `${i}` }, { runId: `r${i}` });
        // Distinct creation times, so the time filter has edges between them.
        await scheduler.wait(2);
      }
      const first = inspector.runs({ limit: 2 });
      const second = inspector.runs({ limit: 2, cursor: first.next ?? undefined });
      const third = inspector.runs({ limit: 2, cursor: second.next ?? undefined });
      expect([...first.items, ...second.items, ...third.items].map((r) => r.runId)).toEqual([
        "r4",
        "r3",
        "r2",
        "r1",
        "r0",
      ]);
      expect(third.next).toBeNull();
      // By creation time: the runs created after r1's and before r4's.
      const at = (id: string) => tasks.get(id)?.createdAt ?? 0;
      const between = inspector.runs({ createdAfter: at("r1"), createdBefore: at("r4") });
      expect(between.items.map((r) => r.runId)).toEqual(["r3", "r2"]);
      expect(codeOf(() => inspector.runs({ createdAfter: "noon" as never }))).toBe(
        "inspect/invalid-argument",
      );
      expect(inspector.run("no-such-run")).toBeNull();
      expect(codeOf(() => inspector.runs({ limit: 0 }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.runs({ state: "done" as never }))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => inspector.runs({ cursor: "forged" }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.runs({ definition: "" }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.run(""))).toBe("inspect/invalid-argument");
    });
  });

  it("shows the calls of a program the run ran in its step journal, decoded by the executor", async () => {
    const stub = freshStub();
    const runId = await within(
      stub,
      async ({ tasks }) => (await tasks.run("shop@v1", { name: "ada" })).runId,
    );
    await driveUntil(stub, runId, (run) => run.state === "completed");
    const view = await within(stub, ({ inspector }) => inspector.run(runId));
    expect(view?.result).toEqual({ hello: "hello ada", failed: "E_CLOSED", again: "hello again" });
    expect(view?.journals.map((j) => [j.name, j.executionId])).toEqual([
      ["program", `program:${runId}`],
    ]);
    const calls = view?.journals[0]?.calls ?? [];
    expect(calls.map((c) => [c.key, c.seq, c.module, c.method, c.outcome, c.decoded])).toEqual([
      ["1", 1, "host:shop", "greet", "value", true],
      ["2", 2, "host:shop", "fail", "error", true],
      ["3", 3, "host:shop", "greet", "value", true],
    ]);
    expect(calls[1]?.error).toEqual({
      name: "Error",
      message: "the shop is closed",
      code: "E_CLOSED",
    });
    expect(calls.every((c) => c.bytes > 0 && c.handles.length === 0 && !c.refused)).toBe(true);
    // One attempt ran them all live.
    expect(calls.map((c) => c.attempt)).toEqual([1, 1, 1]);

    // The execution's own record, through the executor; its calls live in the task's journal.
    const execution = await within(stub, ({ inspector }) =>
      inspector.execution(`program:${runId}`),
    );
    expect(execution).toMatchObject({
      version: 1,
      execution: { executionId: `program:${runId}`, state: "completed", onInterrupt: "replay" },
      result: { hello: "hello ada", failed: "E_CLOSED", again: "hello again" },
      calls: [],
    });
    expect(await within(stub, ({ inspector }) => inspector.execution("no-such"))).toBeNull();
  });

  it("shows an execution on the executor's own journal with its calls", async () => {
    const stub = freshStub();
    const view = await within(stub, async ({ executor, inspector }) => {
      const { PROGRAM } = await import("./fixtures/worker");
      await executor.execute(PROGRAM, { name: "grace" }, { id: "own", onInterrupt: "replay" });
      return inspector.execution("own");
    });
    expect(view?.execution.state).toBe("completed");
    expect(view?.calls.every((c) => c.attempt === null)).toBe(true);
    expect(view?.execution.fingerprint).toMatchObject({ program: expect.any(String) });
    const listed = await within(stub, ({ inspector }) =>
      inspector.executions({ state: "completed" }),
    );
    expect(listed).toMatchObject({
      version: 1,
      items: [{ executionId: "own", state: "completed" }],
      next: null,
    });
    const refusals = await within(stub, ({ inspector }) => [
      codeOf(() => inspector.executions({ limit: 0 })),
      codeOf(() => inspector.executions({ state: "done" as never })),
      codeOf(() => inspector.executions({ cursor: "forged" })),
    ]);
    expect(refusals).toEqual(Array(3).fill("inspect/invalid-argument"));
    expect(view?.calls.map((c) => [c.key, c.method, c.outcome, c.error?.code ?? null])).toEqual([
      ["1", "greet", "value", null],
      ["2", "fail", "error", "E_CLOSED"],
      ["3", "greet", "value", null],
    ]);
  });
});

describe("a restarted run's earlier history", () => {
  it("shows each restart with the steps it dropped, their results through the view's budget and the value route", async () => {
    const stub = freshStub();
    const runId = await within(stub, async ({ tasks }) => {
      const { runId } = await tasks.run("big@v1", { steps: 3, chars: 10 });
      return runId;
    });
    await driveUntil(stub, runId, (run) => run.state === "completed");
    await within(stub, ({ tasks }) => tasks.restart(runId, { from: "s1" }));
    await driveUntil(stub, runId, (run) => run.state === "completed" && run.attempts === 2);
    const view = await within(stub, ({ inspector }) => inspector.run(runId));
    expect(view?.restarts).toEqual([
      {
        restart: 1,
        from: "s1",
        at: expect.any(Number),
        attempt: 1,
        state: "completed",
        steps: [
          {
            name: "s1",
            kind: "do",
            state: "completed",
            attempts: 1,
            result: "x".repeat(10),
            error: null,
          },
          {
            name: "s2",
            kind: "do",
            state: "completed",
            attempts: 1,
            result: "x".repeat(10),
            error: null,
          },
        ],
      },
    ]);
    const value = await within(stub, ({ inspector }) =>
      inspector.value(`/runs/${runId}/restarts/1/steps/1/result`),
    );
    expect(value).toMatchObject({ value: "x".repeat(10), bytes: 12 });
    expect(
      await within(stub, ({ inspector }) =>
        inspector.value(`/runs/${runId}/restarts/2/steps/0/result`),
      ),
    ).toBeNull();
    // A run never restarted shows none.
    const other = await within(
      stub,
      async ({ tasks }) => (await tasks.run("big@v1", { steps: 1, chars: 1 })).runId,
    );
    await driveUntil(stub, other, (run) => run.state === "completed");
    expect((await within(stub, ({ inspector }) => inspector.run(other)))?.restarts).toEqual([]);
  });
});
