import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  advanceTime,
  isTestingError,
  recordRun,
  replayAgainst,
  type TestingRecording,
} from "../src/index";
import { fanDefinitions } from "./fixtures/fan-out";
import type { Fixture } from "./fixtures/worker";
import committed from "./recordings/demo-count.json";

const fresh = () => env.FIXTURE.getByName(`replay-${crypto.randomUUID()}`);
type Definition = keyof ReturnType<Fixture["definitions"]>;

/** Replays a recording against the current code of a fixture definition (its handler, uninstrumented). */
const replayCurrent = (name: Definition, recording: TestingRecording) =>
  runInDurableObject(fresh(), (o) => replayAgainst(o.definitions()[name], recording));

async function recorded(definition: string, input: unknown): Promise<TestingRecording> {
  const stub = fresh();
  const { runId } = await runInDurableObject(stub, (o) =>
    o.tasks.run(definition as "demo.count@v1", input as never),
  );
  await advanceTime(stub, 60_000);
  return runInDurableObject(stub, (o) => recordRun(o.tasks, runId));
}

describe("recordRun and replayAgainst", () => {
  it("records a run of demo.count@v1 as JSON, and the committed recording matches it", async () => {
    const recording = await recorded("demo.count@v1", { steps: 3 });
    expect(recording).toMatchObject({
      format: "durablekit.task-run",
      version: 1,
      definition: "demo.count@v1",
      state: "completed",
      input: expect.any(String),
      steps: [
        { name: "step-0", kind: "do", state: "completed", result: `{"json":0}` },
        { name: "step-1", kind: "do", state: "completed", result: `{"json":1}` },
        { name: "step-2", kind: "do", state: "completed", result: `{"json":2}` },
      ],
    });
    await expect(
      `${JSON.stringify({ ...recording, runId: "r-1" }, null, 2)}\n`,
    ).toMatchFileSnapshot("./recordings/demo-count.json");
  });

  it("replays a recorded run of demo.count@v1 clean against its definition", async () => {
    const recording = committed as TestingRecording;
    expect(await replayCurrent("demo.count@v1", recording)).toEqual({
      ok: true,
      outcome: "settled",
      replayed: 3,
    });
  });
});

describe("definitions with options (flow control, schedules)", () => {
  it("records and replays a run of demo.serial@v1, a { handler, …options } definition the probe instrumented", async () => {
    const recording = await recorded("demo.serial@v1", { key: "k" });
    expect(recording).toMatchObject({ definition: "demo.serial@v1", state: "completed" });
    expect(await replayCurrent("demo.serial@v1", recording)).toEqual({
      ok: true,
      outcome: "settled",
      replayed: 1,
    });
    await runInDurableObject(fresh(), (o) => {
      const instrumented = o.probe.instrument(o.definitions())["demo.serial@v1"];
      // Only its handler is wrapped: its options stay.
      expect(instrumented).toMatchObject({ concurrency: { limit: 1 } });
      expect(instrumented.handler).not.toBe(o.definitions()["demo.serial@v1"].handler);
    });
  });
});

describe("replayAgainst a changed definition", () => {
  const recording = committed as TestingRecording;

  it("reports a renamed step as the divergence, at that step, without running anything", async () => {
    let ran = 0;
    const report = await replayAgainst(async (input: { steps: number }, step) => {
      for (let i = 0; i < input.steps; i++) {
        await step.do(`count-${i}`, () => {
          ran++;
          return i;
        });
      }
      return { counted: input.steps };
    }, recording);
    expect(report).toMatchObject({
      ok: false,
      replayed: 0,
      divergence: { kind: "new-step", step: "count-0", expected: "step-0", code: null },
    });
    expect(ran).toBe(0);
    // The fixture's renamed definition is the same deploy.
    expect(await replayCurrent("count.renamed@v1", recording)).toMatchObject({
      ok: false,
      divergence: { kind: "new-step", step: "count-0" },
    });
  });

  it("replays clean behind a version marker, and a new run takes the new branch", async () => {
    expect(await replayCurrent("count.versioned@v1", recording)).toEqual({
      ok: true,
      outcome: "settled",
      replayed: 3,
    });
    // A new run of the versioned code takes the new branch, and its own recording replays clean.
    const newRun = await recorded("count.versioned@v1", { steps: 3 });
    expect(newRun.steps.map((s) => [s.kind, s.name])).toEqual([
      ["version", "rename-steps"],
      ["do", "count-0"],
      ["do", "count-1"],
      ["do", "count-2"],
    ]);
    expect(newRun.steps[0]?.result).toBe(`{"json":1}`);
    expect(await replayCurrent("count.versioned@v1", newRun)).toMatchObject({
      ok: true,
      outcome: "settled",
    });
    // The old code cannot replay the new run: its first step is not where the new run's is.
    expect(await replayCurrent("demo.count@v1", newRun)).toMatchObject({
      ok: false,
      divergence: { kind: "new-step", step: "step-0" },
    });
  });

  it("reports a step of another kind with the engine's own code and message", async () => {
    const report = await replayAgainst(async (_input: unknown, step) => {
      await step.do("step-0", () => 0);
      await step.sleep("step-1", 1_000);
    }, recording);
    expect(report).toMatchObject({
      ok: false,
      replayed: 2,
      divergence: { kind: "diverged", step: "step-1", code: "tasks/diverged" },
    });
    if (!report.ok) {
      expect(report.divergence.message).toBe(
        'Replay diverged from the journal at step "step-1": journaled as a do step, replayed as sleep. Do not change the steps of a definition that has runs in flight; register the new code under a new versioned name (e.g. "name@v2").',
      );
    }
  });

  it("reports the divergence the engine then meets, with its code and message, before the deploy", async () => {
    const stub = fresh();
    const { runId } = await runInDurableObject(stub, (o) => o.tasks.run("shape@v1"));
    await advanceTime(stub, 1_000);
    const inFlight = await runInDurableObject(stub, (o) => recordRun(o.tasks, runId));
    expect(inFlight.state).toBe("waiting");

    // The new code, checked against the recording before it is deployed …
    const report = await runInDurableObject(stub, async (o) => {
      o.deploy(2);
      return replayAgainst(o.definitions()["shape@v1"], inFlight);
    });
    expect(report).toMatchObject({
      ok: false,
      divergence: { kind: "diverged", step: "hold", code: "tasks/diverged" },
    });
    // … and what the engine does with the run once it is deployed: the same code and message.
    await advanceTime(stub, 86_400_000);
    const run = await runInDurableObject(stub, (o) => o.tasks.get(runId));
    expect(run).toMatchObject({ state: "failed", error: { code: "tasks/diverged" } });
    if (run?.state === "failed" && !report.ok) {
      expect(run.error.message).toBe(report.divergence.message);
    }
  });

  it("reports a recorded step the new code never reaches, and a different result", async () => {
    const two = await replayAgainst(async (_input: unknown, step) => {
      await step.do("step-0", () => 0);
      await step.do("step-1", () => 1);
      return { counted: 3 };
    }, recording);
    expect(two).toMatchObject({ ok: false, divergence: { kind: "unreached", step: "step-2" } });

    const other = await replayAgainst(async (input: { steps: number }, step) => {
      for (let i = 0; i < input.steps; i++) await step.do(`step-${i}`, () => i);
      return { counted: input.steps, extra: true };
    }, recording);
    expect(other).toMatchObject({ ok: false, divergence: { kind: "result", step: null } });
  });

  it("stops at the frontier of a run recorded in flight", async () => {
    const stub = fresh();
    const { runId } = await runInDurableObject(stub, (o) =>
      o.tasks.run("ledger.safe@v1", { amount: 5 }),
    );
    // Its charge awaits I/O; then it parks on a one-minute sleep.
    while ((await runInDurableObject(stub, (o) => o.tasks.get(runId)?.state)) !== "waiting") {
      await scheduler.wait(2);
    }
    const parked = await runInDurableObject(stub, (o) => recordRun(o.tasks, runId));
    expect(parked.state).toBe("waiting");
    expect(await replayCurrent("ledger.safe@v1", parked)).toEqual({
      ok: true,
      outcome: "frontier",
      replayed: 3,
    });
  });

  it("refuses what is not a recording, and an unknown run", async () => {
    await expect(replayCurrent("demo.count@v1", {} as never)).rejects.toSatisfy((error) =>
      isTestingError(error, "testing/invalid-argument"),
    );
    await expect(
      runInDurableObject(fresh(), (o) => recordRun(o.tasks, "no-such-run")),
    ).rejects.toSatisfy((error) => isTestingError(error, "testing/not-found"));
  });
});

describe("replayAgainst on the engine's own replay", () => {
  const recording = committed as TestingRecording;

  it("accepts steps appended after the last recorded step, behind step.version or not", async () => {
    const appended = await replayAgainst(async (input: { steps: number }, step) => {
      for (let i = 0; i < input.steps; i++) await step.do(`step-${i}`, () => i);
      await step.do("audit", () => "audited");
      return { counted: input.steps };
    }, recording);
    expect(appended).toEqual({ ok: true, outcome: "frontier", replayed: 3 });

    const versioned = await replayAgainst(async (input: { steps: number }, step) => {
      for (let i = 0; i < input.steps; i++) await step.do(`step-${i}`, () => i);
      if ((await step.version("audit", 1)) >= 1) await step.do("audit", () => "audited");
      return { counted: input.steps };
    }, recording);
    expect(versioned).toEqual({ ok: true, outcome: "frontier", replayed: 3 });
  });

  it("replays a program's step journal: the recording holds its calls, the journal answers them between steps", async () => {
    const stub = fresh();
    const { runId } = await runInDurableObject(stub, (o) =>
      o.tasks.run("program.checked@v1", { amount: 5 }),
    );
    await advanceTime(stub, 60_000);
    const program = await runInDurableObject(stub, (o) => recordRun(o.tasks, runId));
    expect(program).toMatchObject({ state: "completed" });
    expect(program.journals?.map((j) => [j.name, j.entries.map((e) => e.method)])).toEqual([
      ["program", ["chargeOnce", "chargeOnce"]],
    ]);
    expect(await replayCurrent("program.checked@v1", program)).toEqual({
      ok: true,
      outcome: "settled",
      replayed: 1,
    });
  });

  it("refuses a step journal the way the engine does: another execution is tasks/conflict", async () => {
    const stub = fresh();
    const { runId } = await runInDurableObject(stub, (o) =>
      o.tasks.run("program.checked@v1", { amount: 5 }),
    );
    await advanceTime(stub, 60_000);
    const program = await runInDurableObject(stub, (o) => recordRun(o.tasks, runId));
    let refused: unknown = null;
    const report = await replayAgainst(async (_input: unknown, step) => {
      const result = await step.do("program", () => 0);
      try {
        step.journal("program").lookup("another-execution");
      } catch (error) {
        refused = error;
      }
      return { result, calls: 2 };
    }, program);
    expect(refused).toMatchObject({ code: "tasks/conflict" });
    expect((refused as Error).message).toMatch(/holds execution "program:/);
    expect(report).toMatchObject({ ok: true, outcome: "settled" });
  });

  it("replays child-run steps: starts answer their recorded runs, awaitChildren the children's states", async () => {
    const parent = env.FAN_PARENT.getByName(`replay-${crypto.randomUUID()}`);
    const input = { prefix: crypto.randomUUID(), shards: 2, charge: "charge@v1" as const };
    const { runId } = await runInDurableObject(parent, (o) => o.tasks.run("fan.states@v1", input));
    // The children settle and report back on their own, in milliseconds.
    for (let i = 0; i < 500; i++) {
      const state = await runInDurableObject(parent, (o) => o.tasks.get(runId)?.state);
      if (state === "completed") break;
      await scheduler.wait(2);
    }
    const fan = await runInDurableObject(parent, (o) => recordRun(o.tasks, runId));
    expect(fan).toMatchObject({ state: "completed", result: `{"json":["completed","completed"]}` });
    expect(fan.children?.map((c) => [c.step, c.state])).toEqual([
      ["start 0", "completed"],
      ["start 1", "completed"],
    ]);
    expect(await replayAgainst(fanDefinitions["fan.states@v1"], fan)).toEqual({
      ok: true,
      outcome: "settled",
      replayed: 3,
    });
    // A recording holds the children's states, not their results: reading one is refused.
    await expect(replayAgainst(fanDefinitions["fan@v1"], fan)).rejects.toSatisfy((error) =>
      isTestingError(error, "testing/unsupported"),
    );
  });
});
