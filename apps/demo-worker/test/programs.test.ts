import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

const JOBS_PROGRAM = `
import { createJob } from "codemode:jobs";
export default async function () {
  const job = await createJob({ name: "build" });
  const run = await job.start({ ref: "main", durationMs: 30 });
  const first = await run.status();
  const done = await run.wait({ signal: AbortSignal.timeout(5000) });
  return { job: await job.info(), first: first.status, done: done.status };
}`;

function post(body: unknown): Promise<Response> {
  return exports.default.fetch("http://demo/programs", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

interface JobCounters {
  creates: number;
  starts: number;
  waits: number;
  disposals: number;
}

async function counters(): Promise<JobCounters> {
  return (await (await exports.default.fetch("http://demo/debug/jobs")).json()) as JobCounters;
}

describe("POST /programs and GET /programs/:id", () => {
  it("runs a program against codemode:jobs and records the execution", async () => {
    const before = await counters();
    const response = await post({ code: JOBS_PROGRAM });
    expect(response.status).toBe(200);
    const execution = (await response.json()) as {
      executionId: string;
      state: string;
      result: { job: { name: string; id: string }; first: string; done: string };
    };
    expect(execution.state).toBe("completed");
    expect(execution.result.job.name).toBe("build");
    expect(execution.result.job.id).toBe(`job:${execution.executionId}:1`);
    expect(execution.result.first).toBe("running");
    expect(execution.result.done).toBe("succeeded");

    const record = await exports.default.fetch(`http://demo/programs/${execution.executionId}`);
    expect(record.status).toBe(200);
    expect(await record.json()).toMatchObject({
      executionId: execution.executionId,
      state: "completed",
      // Replay is the default: every call was journaled.
      onInterrupt: "replay",
      access: "read-write",
      attempt: 1,
      calls: 5,
      result: execution.result,
    });

    const after = await counters();
    expect(after.creates - before.creates).toBe(1);
    expect(after.starts - before.starts).toBe(1);
    expect(after.waits - before.waits).toBe(1);
    // The job and the run were both still held when the program ended, so the bridge disposed both.
    expect(after.disposals - before.disposals).toBe(2);
  });

  it("refuses writes in a read-only program before they run", async () => {
    const before = await counters();
    const response = await post({
      access: "read",
      code: `import { createJob } from "codemode:jobs";
        export default async function () {
          try { await createJob({ name: "nope" }); return "created"; }
          catch (e) { return { name: e.name, code: e.code }; }
        }`,
    });
    expect(await response.json()).toMatchObject({
      state: "completed",
      result: { name: "BridgeError", code: "bridge/access-denied" },
    });
    expect((await counters()).creates).toBe(before.creates);
  });

  it("answers a program that throws with a failed execution carrying the error", async () => {
    const response = await post({
      code: `import { createJob } from "codemode:jobs";
        export default async function () { await createJob({}); }`,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      state: "failed",
      error: { name: "TypeError", code: "E_JOB_OPTIONS" },
    });
  });

  it("answers bad requests with coded 4xx errors", async () => {
    const cases: Array<[unknown, number, string]> = [
      ["{not json", 400, "demo/bad-json"],
      [{}, 400, "demo/bad-request"],
      [{ code: 42 }, 400, "demo/bad-request"],
      [{ code: "export default () => 1;", onInterrupt: "sometimes" }, 400, "demo/bad-request"],
      [{ code: "export default () => 1;", access: "all" }, 400, "demo/bad-request"],
      [{ code: `import x from "codemode:nope"; export default () => x;` }, 400, "bridge/not-found"],
      [{ code: "export const x = 1;" }, 400, "bridge/invalid-program"],
    ];
    for (const [body, status, code] of cases) {
      const response = await post(body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(code);
    }
    const missing = await exports.default.fetch("http://demo/programs/no-such-execution");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe(
      "demo/program-not-found",
    );
  });
});
