import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { HostCounts } from "../src/host-counts";
import { DemoHostModules } from "../src/host-modules";
import { releaseProgram } from "./fixtures/release-program";

const JOBS_PROGRAM = releaseProgram(20);

async function call(method: string, path: string, body?: unknown) {
  const response = await exports.default.fetch(`http://demo${path}`, {
    method,
    ...(body === undefined
      ? {}
      : {
          headers: { "Content-Type": "application/json" },
          body: typeof body === "string" ? body : JSON.stringify(body),
        }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function counts(executionId: string): Promise<HostCounts> {
  return (await call("GET", `/debug/jobs/${encodeURIComponent(executionId)}`)).body as never;
}

function programs() {
  return env.PROGRAMS.getByName("default");
}

/** Starts `code` as execution `id` (a replay run, the default) and expects it interrupted. */
async function interrupted(id: string, code: string) {
  const started = await call("POST", "/programs", { id, code });
  expect(started.status).toBe(200);
  expect(started.body.state).toBe("interrupted");
  return started.body;
}

describe("replayable programs: codemode:jobs, codemode:approval and resume", () => {
  it("interrupts at approval(), survives an eviction, and on resume waits on the revived Run without starting a second run", async () => {
    const id = `jobs-${crypto.randomUUID()}`;
    const first = await interrupted(id, JOBS_PROGRAM);
    expect(first).toEqual({
      executionId: id,
      state: "interrupted",
      interrupt: { key: "2", callId: `${id}:2`, payload: { reason: "ship it?" } },
    });
    await evictDurableObject(programs());

    const record = await call("GET", `/programs/${id}`);
    expect(record.body).toMatchObject({
      state: "interrupted",
      onInterrupt: "replay",
      interrupt: { key: "2", callId: `${id}:2`, payload: { reason: "ship it?" } },
    });

    const resumed = await call("POST", `/programs/${id}/resume`, {
      value: { approved: true, by: "ada" },
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({
      executionId: id,
      state: "completed",
      result: {
        shipped: true,
        by: "ada",
        done: { id: `run:${id}:1.1`, status: "succeeded" },
        job: { id: `job:${id}:1`, name: "release" },
      },
    });
    const after = await counts(id);
    // createJob, start and approval ran once, before the interrupt; the resumed attempt was
    // answered from the journal up to approval, whose answer was the resume value.
    expect(after).toMatchObject({ creates: 1, starts: 1, approvals: 1, waits: 1 });
    // wait() and info() revived the Run and the Job, and the revived Run served wait().
    expect(after).toMatchObject({ revives: 2, revivedWaits: 1 });
    // Job and Run of the first attempt, revived Job and Run of the second: all disposed.
    expect(after.targets).toBe(4);
    expect(after.disposals).toBe(after.targets);
  });

  it("answers the rejected branch with the resume value, running nothing after the interrupt", async () => {
    const id = `jobs-${crypto.randomUUID()}`;
    await interrupted(id, JOBS_PROGRAM);
    const resumed = await call("POST", `/programs/${id}/resume`, { value: { approved: false } });
    expect(resumed.body).toMatchObject({ state: "completed", result: { shipped: false } });
    expect(await counts(id)).toMatchObject({ starts: 1, approvals: 1, waits: 0, revives: 0 });
  });

  it("refuses a resume of an unknown, running, finished or already resumed execution, and a bad body, with coded errors", async () => {
    const id = `jobs-${crypto.randomUUID()}`;
    await interrupted(id, JOBS_PROGRAM);
    const cases: Array<[string, unknown, number, string]> = [
      ["/programs/no-such-execution/resume", { value: 1 }, 404, "bridge/not-found"],
      [`/programs/${id}/resume`, {}, 400, "demo/bad-request"],
      [`/programs/${id}/resume`, { value: 1, extra: 2 }, 400, "demo/bad-request"],
      [`/programs/${id}/resume`, [1], 400, "demo/bad-request"],
      [`/programs/${id}/resume`, "{not json", 400, "demo/bad-json"],
      [`/programs/${id}/resume`, { value: "x".repeat(1_100_000) }, 413, "demo/body-too-large"],
    ];
    for (const [path, body, status, code] of cases) {
      const response = await call("POST", path, body);
      expect({
        path,
        status: response.status,
        code: (response.body.error as { code: string }).code,
      }).toEqual({ path, status, code });
    }
    // None of those resumed it: it still answers, once.
    expect(
      (await call("POST", `/programs/${id}/resume`, { value: { approved: false } })).status,
    ).toBe(200);
    const twice = await call("POST", `/programs/${id}/resume`, { value: { approved: true } });
    expect(twice).toMatchObject({ status: 409, body: { error: { code: "bridge/conflict" } } });

    const finished = await call("POST", "/programs", { code: "export default () => 1;" });
    expect(finished.body.state).toBe("completed");
    const notInterrupted = await call(
      "POST",
      `/programs/${finished.body.executionId as string}/resume`,
      { value: null },
    );
    expect(notInterrupted).toMatchObject({
      status: 409,
      body: { error: { code: "bridge/conflict" } },
    });
  });

  it('keeps a run on another policy: onInterrupt "fail" fails at approval() with bridge/interrupted', async () => {
    const response = await call("POST", "/programs", { code: JOBS_PROGRAM, onInterrupt: "fail" });
    expect(response.body).toMatchObject({
      state: "failed",
      error: { code: "bridge/interrupted" },
    });
  });

  it("refuses approval() in a read-only program before it runs, so a read-only run is never interrupted", async () => {
    const id = `read-${crypto.randomUUID()}`;
    const response = await call("POST", "/programs", {
      id,
      access: "read",
      code: `import { approval } from "codemode:approval";
        export default async function () {
          try { await approval("may I?"); return "asked"; } catch (e) { return e.code; }
        }`,
    });
    expect(response.body).toMatchObject({ state: "completed", result: "bridge/access-denied" });
    expect((await counts(id)).approvals).toBe(0);
  });

  it("joins an interrupted execution when POST /programs is retried with its id", async () => {
    const id = `jobs-${crypto.randomUUID()}`;
    const first = await interrupted(id, JOBS_PROGRAM);
    const retried = await call("POST", "/programs", { id, code: JOBS_PROGRAM });
    expect(retried).toMatchObject({ status: 200, body: first });
    expect(await counts(id)).toMatchObject({ creates: 1, starts: 1, approvals: 1 });
  });
});

describe("codemode:process: output read in bounded, journaled chunks", () => {
  const PROCESS_PROGRAM = `
import { spawn } from "codemode:process";
import { approval } from "codemode:approval";
export default async function () {
  const proc = await spawn("seq 3000");
  let out = "";
  let reads = 0;
  for (;;) {
    const { chunk, done } = await proc.read({ maxBytes: 1000 });
    out += chunk;
    reads++;
    if (reads === 3) await approval("read on?");
    if (done) break;
  }
  const lines = out.split("\\n").filter(Boolean);
  return { reads, lines: lines.length, first: lines[0], last: lines.at(-1), exit: await proc.wait() };
}`;

  it("reads each byte once across an interrupt and an eviction: replayed reads are answered from the journal", async () => {
    const id = `proc-${crypto.randomUUID()}`;
    await interrupted(id, PROCESS_PROGRAM);
    expect(await counts(id)).toMatchObject({ spawns: 1, reads: 3 });
    await evictDurableObject(programs());
    const resumed = await call("POST", `/programs/${id}/resume`, { value: true });
    // seq 3000 prints 13,893 bytes: 14 reads of at most 1,000 bytes.
    expect(resumed.body).toMatchObject({
      state: "completed",
      result: { reads: 14, lines: 3000, first: "1", last: "3000", exit: { exitCode: 0 } },
    });
    // The three reads before the interrupt ran once; the replay answered them from the journal.
    expect(await counts(id)).toMatchObject({ spawns: 1, reads: 14 });
  });

  it("refuses a bad command or read size with a coded TypeError the program catches, and bounds seq to 10,000 lines", async () => {
    const response = await call("POST", "/programs", {
      code: `import { spawn } from "codemode:process";
        export default async function () {
          const codes = [];
          try { await spawn(""); } catch (e) { codes.push(e.name + " " + e.code); }
          const proc = await spawn("nope --x");
          try { await proc.read({ maxBytes: 0 }); } catch (e) { codes.push(e.name + " " + e.code); }
          const huge = await spawn("seq 20000");
          return { codes, out: await proc.read(), exit: await proc.wait(), huge: await huge.wait() };
        }`,
    });
    expect(response.body).toMatchObject({
      state: "completed",
      result: {
        codes: ["TypeError E_PROCESS_COMMAND", "TypeError E_PROCESS_OPTIONS"],
        out: { chunk: "nope: command not found (the demo runs echo and seq)\n", done: true },
        exit: { exitCode: 127 },
        // Over the 10,000 lines a spawn may store: refused as seq refuses a bad range.
        huge: { exitCode: 1 },
      },
    });
  });
});

describe("demo.program@v1: a program run inside a task", () => {
  async function taskState(runId: string, states: string[]) {
    for (let i = 0; i < 400; i++) {
      const { body } = await call("GET", `/tasks/${runId}`);
      if (states.includes(body.state as string)) return body;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`run ${runId} did not reach ${states.join(" or ")}`);
  }

  it("is interrupted, survives an eviction, is resumed by a resume event and completes, each host call run once", async () => {
    const started = await call("POST", "/tasks/demo.program@v1", { input: { code: JOBS_PROGRAM } });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    const waiting = await taskState(runId, ["waiting", "failed"]);
    expect(waiting).toMatchObject({ state: "waiting", reason: "event", eventType: "resume" });
    expect((waiting.steps as Array<{ name: string; result: unknown }>)[0]).toMatchObject({
      name: "program",
      result: {
        executionId: `program:${runId}`,
        state: "interrupted",
        interrupt: { key: "2", payload: { reason: "ship it?" } },
      },
    });
    await evictDurableObject(env.WORKSPACE.getByName("default"));

    const sent = await call("POST", `/tasks/${runId}/events/resume`, { approved: true, by: "bo" });
    expect(sent.body).toEqual({ result: "delivered" });
    const done = await taskState(runId, ["completed", "failed", "cancelled"]);
    expect(done).toMatchObject({
      state: "completed",
      result: {
        executionId: `program:${runId}`,
        state: "completed",
        result: { shipped: true, by: "bo", done: { status: "succeeded" } },
      },
    });
    const host = (await call("GET", `/debug/executions/${runId}/jobs`))
      .body as unknown as HostCounts;
    expect(host).toMatchObject({ creates: 1, starts: 1, approvals: 1, waits: 1, revivedWaits: 1 });
    // createJob and job.start are idempotent by callId, so their counters alone cannot show a
    // second run: the replay revived both objects instead of making them live (2 live + 2 revived).
    expect(host).toMatchObject({ revives: 2, targets: 4 });
    expect(host.disposals).toBe(host.targets);

    // The inspector shows the program's journal inside the run's view, decoded by the executor.
    const view = (await call("GET", `/inspect/api/runs/${runId}`)).body as unknown as {
      journals: Array<{
        name: string;
        executionId: string;
        calls: Array<{
          key: string;
          module: string;
          method: string;
          outcome: string;
          handles: string[];
          attempt: number | null;
        }>;
      }>;
    };
    expect(view.journals.map((j) => [j.name, j.executionId])).toEqual([
      ["program", `program:${runId}`],
    ]);
    expect(
      view.journals[0]?.calls.map((c) => [c.key, c.module, c.method, c.outcome, c.handles]),
    ).toEqual([
      ["1", "codemode:jobs", "createJob", "handle", ["codemode:jobs#Job"]],
      ["1.1", "codemode:jobs#Job", "start", "handle", ["codemode:jobs#Run"]],
      // The interrupt, resolved to the resume value when the program was resumed.
      ["2", "codemode:approval", "approval", "value", []],
      ["1.1.1", "codemode:jobs#Run", "wait", "value", []],
      ["1.2", "codemode:jobs#Job", "info", "value", []],
    ]);
    // Which attempt ran each call live: the first ran createJob and start, and was released at
    // approval; the one the resume event woke answered those two from the journal and ran the rest.
    expect(view.journals[0]?.calls.map((c) => [c.key, c.attempt])).toEqual([
      ["1", 1],
      ["1.1", 1],
      ["2", 2],
      ["1.1.1", 2],
      ["1.2", 2],
    ]);
  });

  it("refuses an input without code when the run starts, and fails a program the bridge refuses without retrying it", async () => {
    const bad = await call("POST", "/tasks/demo.program@v1", { input: { code: "" } });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: "demo/invalid-input" } } });
    const refused = await call("POST", "/tasks/demo.program@v1", {
      input: { code: 'import x from "codemode:nope"; export default () => x;' },
    });
    const failed = await taskState(refused.body.runId as string, ["failed", "completed"]);
    expect(failed).toMatchObject({
      state: "failed",
      error: { code: "tasks/non-retryable" },
    });
    expect((failed.error as { message: string }).message).toContain("bridge/not-found");
  });
});

describe("the demo host modules' storage", () => {
  it("answers a process read that runs again under the same callId with the same chunk, moving the cursor once", async () => {
    const stub = env.PROTOCOL_STREAMS.getByName(`host-${crypto.randomUUID()}`);
    await runInDurableObject(stub, (_instance: unknown, state: DurableObjectState) => {
      const host = new DemoHostModules(state.storage);
      host.processes.spawn("e1", "process:e1:1", "seq 10");
      const row = { id: "process:e1:1", executionId: "e1", output: "", exitCode: 0 };
      const output = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
      const first = host.processes.read({ ...row, output }, "e1:1.1", 4);
      // The object died before the answer was journaled: the same call runs again.
      const again = host.processes.read({ ...row, output }, "e1:1.1", 4);
      const next = host.processes.read({ ...row, output }, "e1:1.2", 100);
      expect([first, again, next]).toEqual([
        { chunk: "1\n2\n", done: false },
        { chunk: "1\n2\n", done: false },
        { chunk: "3\n4\n5\n6\n7\n8\n9\n10\n", done: true },
      ]);
      expect(host.counters.read("e1")).toMatchObject({ spawns: 1, reads: 2 });
    });
  });

  it("carries a jobs state written before replay into schema version 2: its counters, jobs and runs", async () => {
    const stub = env.PROTOCOL_STREAMS.getByName(`host-${crypto.randomUUID()}`);
    await runInDurableObject(stub, (_instance: unknown, state: DurableObjectState) => {
      const sql = state.storage.sql;
      // What the jobs module kept before replay (schema version 1, no meta row).
      sql.exec(
        "CREATE TABLE demo_jobs (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL)",
      );
      sql.exec(
        "CREATE TABLE demo_job_runs (id TEXT PRIMARY KEY, job_id TEXT NOT NULL, input TEXT NOT NULL, started_at INTEGER NOT NULL, done_at INTEGER NOT NULL)",
      );
      sql.exec("CREATE TABLE demo_job_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)");
      sql.exec("INSERT INTO demo_jobs VALUES ('job:old:1', 'build', 1)");
      sql.exec("INSERT INTO demo_job_runs VALUES ('run:old:1.1', 'job:old:1', '{}', 1, 2)");
      sql.exec("INSERT INTO demo_job_counters VALUES ('creates', 7), ('starts', 5)");

      const host = new DemoHostModules(state.storage);
      expect(host.counters.read()).toMatchObject({ creates: 7, starts: 5, waits: 0 });
      expect(host.jobs.reviveJob("job:old:1").info()).toEqual({ id: "job:old:1", name: "build" });
      expect(host.jobs.reviveRun("run:old:1.1").status()).toEqual({
        id: "run:old:1.1",
        status: "succeeded",
      });
      // Constructing it again finds version 2 and changes nothing.
      expect(new DemoHostModules(state.storage).counters.read()).toMatchObject({ creates: 7 });
    });
  });
});
