import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { freshReplay, inReplay, storedCounters } from "./helpers";

const JOBS_PROGRAM = `
  import { createJob } from "codemode:jobs";
  import { approval } from "test:replay";
  export default async function () {
    const job = await createJob({ name: "build" });
    const run = await job.start();
    const answer = await approval("ship it?");
    if (!answer.approved) return "rejected";
    const done = await run.wait(5);
    return { done, info: await job.info() };
  }
`;

async function interruptedJobs(id: string) {
  const stub = freshReplay();
  const first = await inReplay(stub, (instance) =>
    instance.executor.execute(JOBS_PROGRAM, undefined, { id }),
  );
  return { stub, first };
}

describe("replay: the jobs scenario", () => {
  it("interrupts at approval, survives an eviction, and on resume waits on the revived run without starting a second one", async () => {
    const { stub, first } = await interruptedJobs("jobs-1");
    expect(first).toEqual({
      executionId: "jobs-1",
      state: "interrupted",
      interrupt: { key: "2", callId: "jobs-1:2", payload: { reason: "ship it?" } },
    });
    await evictDurableObject(stub);
    const record = await inReplay(stub, (instance) => instance.executor.get("jobs-1"));
    expect(record).toMatchObject({ state: "interrupted", interrupt: first.interrupt });
    const done = await inReplay(stub, (instance) =>
      instance.executor.resume("jobs-1", { approved: true }),
    );
    expect(done).toMatchObject({
      state: "completed",
      result: {
        done: { id: "run:jobs-1:1.1", status: "succeeded", servedBy: "v1", callId: "jobs-1:1.1.1" },
        info: { id: "job:jobs-1:1", name: "build", version: 1 },
      },
    });
    const counters = await storedCounters(stub);
    expect(counters).toMatchObject({ creates: 1, starts: 1, approvals: 1, waits: 1, revives: 2 });
    expect(counters.disposals).toBe(counters.created);
  });

  it("resumes after a deploy: the new module version revives the run and serves wait", async () => {
    const { stub, first } = await interruptedJobs("jobs-2");
    expect(first.state).toBe("interrupted");
    await inReplay(stub, (instance) => instance.setVersion(2));
    await evictDurableObject(stub);
    const done = await inReplay(stub, (instance) =>
      instance.executor.resume("jobs-2", { approved: true }),
    );
    expect(done).toMatchObject({
      state: "completed",
      result: { done: { servedBy: "v2" }, info: { version: 2, name: "build" } },
    });
    const counters = await storedCounters(stub);
    expect(counters).toMatchObject({ creates: 1, starts: 1, approvals: 1, waits: 1 });
    expect(counters.disposals).toBe(counters.created);
  });
});

describe("replay: disposal when a resumed run fails", () => {
  it("disposes every target, live and revived, when the resumed run fails after reviving them", async () => {
    const stub = freshReplay();
    const program = `
      import { createJob } from "codemode:jobs";
      import { approval, fail } from "test:replay";
      export default async function () {
        const job = await createJob({ name: "build" });
        const run = await job.start();
        await approval("ship it?");
        await run.wait(5);
        await job.info();
        await fail();
      }
    `;
    const first = await inReplay(stub, (i) =>
      i.executor.execute(program, undefined, { id: "jobs-fail" }),
    );
    expect(first.state).toBe("interrupted");
    await evictDurableObject(stub);
    const done = await inReplay(stub, (i) => i.executor.resume("jobs-fail", { approved: true }));
    expect(done).toMatchObject({ state: "failed", error: { code: "E_NO_JOB" } });
    const counters = await storedCounters(stub);
    // Both objects were revived for the live calls after the resume, and all are disposed.
    expect(counters).toMatchObject({ creates: 1, starts: 1, revives: 2, fails: 1 });
    expect(counters.created).toBeGreaterThan(0);
    expect(counters.disposals).toBe(counters.created);
  });
});
