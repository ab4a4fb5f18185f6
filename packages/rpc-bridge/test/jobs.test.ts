import { describe, expect, it } from "vitest";
import { countersOf, freshFixture, run } from "./helpers";

describe("the jobs API as one host module", () => {
  it("creates a job, starts a run and waits for it through returned objects, with no source half", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { createJob } from "codemode:jobs";
      export default async function () {
        const job = await createJob({ name: "build" });
        const run = await job.start({ ref: "main" });
        const before = await run.status();
        const done = await run.wait({ signal: AbortSignal.timeout(5000) });
        return { info: await job.info(), before: before.status, done };
      }
    `,
    );
    expect(execution.state).toBe("completed");
    const result = execution.result as {
      info: { name: string };
      before: string;
      done: { status: string; id: string };
    };
    expect(result.info.name).toBe("build");
    expect(result.before).toBe("running");
    expect(result.done.status).toBe("succeeded");
    // The run's id came from the callId of job.start: call 1 made the job, its first method call is 1.1.
    expect(result.done.id).toBe(`run:${execution.executionId}:1.1`);
    const counters = await countersOf(stub);
    expect(counters.jobsCreated).toBe(1);
    expect(counters.runsStarted).toBe(1);
    expect(counters.waits).toBe(1);
  });

  it("delivers a thrown TypeError with its code and retryable flag to the program", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { createJob } from "codemode:jobs";
      export default async function () {
        try { await createJob({}); return "no error"; }
        catch (e) { return { isTypeError: e instanceof TypeError, name: e.name, message: e.message, code: e.code, retryable: e.retryable }; }
      }
    `,
    );
    expect(execution.result).toEqual({
      isTypeError: true,
      name: "TypeError",
      message: "createJob needs { name: string }.",
      code: "E_BAD_OPTIONS",
      retryable: false,
    });
  });
});
