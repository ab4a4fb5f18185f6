import {
  abortAllDurableObjects,
  evictDurableObject,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProgramHost } from "./fixtures/program-host";
import { sleep } from "./helpers";

/** Waits (polling the snapshot) until the run's state satisfies `predicate`. */
async function until(host: ProgramHost, runId: string, predicate: (state: string) => boolean) {
  for (let i = 0; i < 1_000; i++) {
    const snapshot = host.tasks.get(runId);
    if (snapshot && predicate(snapshot.state)) return snapshot;
    await sleep(5);
  }
  throw new Error(`run ${runId} stuck: ${JSON.stringify(host.tasks.get(runId))}`);
}

/** The program's journal as the task run holds it: its calls, in recorded order. */
function programCalls(state: DurableObjectState, runId: string) {
  return state.storage.sql
    .exec<{ call_key: string; method: string; outcome: string }>(
      "SELECT call_key, method, outcome FROM dk_tasks_calls WHERE run_id = ? AND journal = 'program' ORDER BY seq",
      runId,
    )
    .toArray();
}

/** Resumes the parked task with an "answer" event and waits for it to complete. */
async function answer(host: ProgramHost, runId: string, value: string) {
  expect(await host.tasks.sendEvent(runId, "answer", value)).toBe("delivered");
  return until(host, runId, (state) => !["pending", "running", "waiting"].includes(state));
}

const COMPLETED = {
  state: "completed",
  result: {
    state: "completed",
    result: { prepared: 40, answer: "yes", finished: "yes:41" },
  },
};

describe("a program run inside a task (rpc-bridge replay over step.journal)", () => {
  it("is interrupted, survives an eviction, is resumed by an event and completes, each host call run once", async () => {
    const stub = env.PROGRAM.getByName(`p-${crypto.randomUUID()}`);
    const runId = await runInDurableObject(stub, async (host: ProgramHost, state) => {
      const { runId } = await host.tasks.run("ship@v1", { n: 4 });
      // The program called prepare, then approval() interrupted it; the task waits for the answer.
      expect(await until(host, runId, (s) => s === "waiting")).toMatchObject({
        reason: "event",
        eventType: "answer",
      });
      expect(host.hostCalls()).toEqual({ prepare: 1, approval: 1 });
      expect(programCalls(state, runId)).toEqual([
        { call_key: "1", method: "prepare", outcome: "value" },
        { call_key: "2", method: "approval", outcome: "interrupt" },
      ]);
      return runId;
    });
    await evictDurableObject(stub);
    await runInDurableObject(stub, async (host: ProgramHost, state) => {
      expect(await answer(host, runId, "yes")).toMatchObject(COMPLETED);
      // Replayed from the step journal: prepare and approval did not run again.
      expect(host.hostCalls()).toEqual({ prepare: 1, approval: 1, finish: 1 });
      expect(programCalls(state, runId)).toEqual([
        { call_key: "1", method: "prepare", outcome: "value" },
        { call_key: "2", method: "approval", outcome: "value" },
        { call_key: "3", method: "finish", outcome: "value" },
      ]);
      // A reader's view: the run's step journals through journals(), decoded by the executor.
      const journals = host.tasks.journals(runId) ?? [];
      expect(journals.map((j) => [j.name, j.executionId, j.entries.map((e) => e.key)])).toEqual([
        ["program", `program:${runId}`, ["1", "2", "3"]],
      ]);
      const [program] = journals;
      const calls = host.executor.calls(`program:${runId}`, {
        journal: { lookup: () => program?.entries ?? [] },
      });
      expect(calls.map((c) => [c.key, c.seq, c.module, c.method, c.outcome])).toEqual([
        ["1", 1, "host:work", "prepare", "value"],
        ["2", 2, "host:work", "approval", "value"],
        ["3", 3, "host:work", "finish", "value"],
      ]);
      expect(calls.every((c) => c.bytes > 0 && c.handles.length === 0 && !c.refused)).toBe(true);
      expect(host.tasks.journals("no-such-run")).toBeNull();
    });
  });

  it("re-attaches a resumed program its object died under mid-call: calls before it are answered from the journal, the call in flight runs again once", async () => {
    const name = `p-${crypto.randomUUID()}`;
    const runId = await runInDurableObject(
      env.PROGRAM.getByName(name),
      async (host: ProgramHost) => {
        const { runId } = await host.tasks.run("ship@v1", { n: 4 });
        await until(host, runId, (s) => s === "waiting");
        // Answered "slow": the resumed program's finish never returns the first time.
        expect(await host.tasks.sendEvent(runId, "answer", "slow")).toBe("delivered");
        for (let i = 0; i < 400 && (host.hostCalls().finish ?? 0) < 1; i++) await sleep(5);
        expect(host.hostCalls()).toEqual({ prepare: 1, approval: 1, finish: 1 });
        return runId;
      },
    );
    // The object dies with the call in flight (a crash: nothing waits for the hung call).
    await abortAllDurableObjects();
    const stub = env.PROGRAM.getByName(name);
    // The task's claim deadline (300 ms) replays the run: the step in flight runs again and
    // re-attaches to the program, which replays from the step journal and finishes live.
    await sleep(350);
    await runDurableObjectAlarm(stub);
    await runInDurableObject(stub, async (host: ProgramHost, state) => {
      expect(
        await until(host, runId, (s) => !["pending", "running", "waiting"].includes(s)),
      ).toMatchObject({
        state: "completed",
        result: {
          state: "completed",
          result: { prepared: 40, answer: "slow", finished: "slow:41" },
        },
      });
      expect(host.hostCalls()).toEqual({ prepare: 1, approval: 1, finish: 2 });
      expect(programCalls(state, runId).map((call) => call.method)).toEqual([
        "prepare",
        "approval",
        "finish",
      ]);
    });
  });
});
