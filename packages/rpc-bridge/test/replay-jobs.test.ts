import { evictDurableObject } from "cloudflare:test";
import { JournalStore } from "@durablekit/handle-journal";
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

/**
 * Runs a program of `statements` (with `createJob`, `sharedRun`, `approval` and the `cache` module
 * imported) until it interrupts,
 * lets `between` change the object's storage, evicts the object and resumes the run.
 */
async function resumedAfterEviction(
  id: string,
  statements: string,
  between?: (state: DurableObjectState) => void,
) {
  const stub = freshReplay();
  const program = `
    import { createJob, sharedRun } from "codemode:jobs";
    import * as cache from "test:cache";
    import { approval } from "test:replay";
    export default async function () { ${statements} }
  `;
  const first = await inReplay(stub, (i) => i.executor.execute(program, undefined, { id }));
  expect(first.state).toBe("interrupted");
  if (between !== undefined) await inReplay(stub, (_i, state) => between(state));
  await evictDurableObject(stub);
  const done = await inReplay(stub, (i) => i.executor.resume(id, { approved: true }));
  return { stub, done };
}

describe("replay: an object returned by more than one call", () => {
  it("is one object on replay as it was live: its calls keep their keys and are answered from the journal", async () => {
    const { stub, done } = await resumedAfterEviction(
      "same-1",
      `
        const job = await createJob({ name: "build" });
        const run = await job.start();
        const again = await job.current();
        const pair = await job.twice();
        const before = await again.wait(1);
        await approval("ship it?");
        const after = await pair[1].wait(1);
        return {
          same: again === run && pair[0] === run && pair[1] === run,
          before: before.callId,
          after: after.callId,
        };
      `,
    );
    // Live, the run is one handle made by call 1.1, so every wait is keyed under 1.1 however the
    // program reached it; the replay must see the same object and keys, or it diverges.
    expect(done).toMatchObject({
      state: "completed",
      result: { same: true, before: "same-1:1.1.1", after: "same-1:1.1.2" },
    });
    // The journal names the object by the call that first returned it: "1.1#0".
    const bodies = await inReplay(stub, (_i, state) =>
      Object.fromEntries(
        new JournalStore(state).lookup("same-1").map((e) => [e.key, e.payload ?? ""]),
      ),
    );
    expect(bodies["1.1"]).not.toContain('"k"');
    expect(bodies["1.2"]).toContain('"k":{"0":"1.1#0"}');
    expect(bodies["1.3"]).toContain('"k":{"0":"1.1#0","1":"1.1#0"}');
    const counters = await storedCounters(stub);
    // The wait before the interrupt was answered from the journal: one live wait per attempt.
    expect(counters).toMatchObject({ creates: 1, starts: 1, waits: 2, revives: 1 });
    expect(counters.disposals).toBe(counters.created);
  });

  it("is one object on replay when the call that returned it first was not the first to ask", async () => {
    const { stub, done } = await resumedAfterEviction(
      "same-race",
      `
        const job = await createJob({ name: "build" });
        // Call 1.2 answers first and so makes the run; 1.1 then returns the same one.
        const [slow, fast] = await Promise.all([job.shared(30), job.shared(1)]);
        const before = await slow.wait(1);
        await approval("ship it?");
        const after = await fast.wait(1);
        return { same: slow === fast, before: before.callId, after: after.callId };
      `,
    );
    expect(done).toMatchObject({
      state: "completed",
      result: { same: true, before: "same-race:1.2.1", after: "same-race:1.2.2" },
    });
    const counters = await storedCounters(stub);
    expect(counters).toMatchObject({ creates: 1, waits: 2, revives: 1 });
    expect(counters.disposals).toBe(counters.created);
  });

  it("is one object when another module's call returned it first, and revives through that module", async () => {
    const { stub, done } = await resumedAfterEviction(
      "same-modules",
      `
        // Call 2 (test:cache) answers first and makes the run; call 1 (codemode:jobs) returns it
        // again. The replay answers call 1 first.
        const [x, y] = await Promise.all([sharedRun(30), cache.sharedRun(1)]);
        await approval("ship it?");
        const after = await x.wait(1);
        return { same: x === y, callId: after.callId };
      `,
    );
    expect(done).toMatchObject({
      state: "completed",
      result: { same: true, callId: "same-modules:2.1" },
    });
    const counters = await storedCounters(stub);
    expect(counters).toMatchObject({ waits: 1, revives: 1 });
    expect(counters.disposals).toBe(counters.created);
  });

  it("is released once when a live call returned its target before the replayed handle was revived", async () => {
    const { stub, done } = await resumedAfterEviction(
      "same-cached",
      `
        const x = await cache.cached("c1");
        await approval("ship it?");
        // After the resume: the host hands out its one object for c1, then reviving x gives the
        // same one. Two handles reach it; disposing one must not release it under the other.
        const y = await cache.cached("c1");
        const first = await x.ping();
        const z = await cache.cached("c1");
        y[Symbol.dispose]();
        const second = await x.ping();
        return { xy: x === y, yz: y === z, first, second };
      `,
    );
    expect(done).toMatchObject({
      state: "completed",
      result: { xy: false, yz: true, first: "pong from c1", second: "pong from c1" },
    });
    const counters = await storedCounters(stub);
    expect(counters).toMatchObject({ pings: 2, revives: 1 });
    expect(counters.disposals).toBe(counters.created);
  });

  it("is a new object after the program disposed it, live and on replay alike", async () => {
    const { stub, done } = await resumedAfterEviction(
      "same-2",
      `
        const job = await createJob({ name: "build" });
        const run = await job.start();
        run[Symbol.dispose]();
        const again = await job.current();
        const before = await again.wait(1);
        await approval("ship it?");
        const after = await again.wait(1);
        return { same: again === run, before: before.callId, after: after.callId };
      `,
    );
    expect(done).toMatchObject({
      state: "completed",
      result: { same: false, before: "same-2:1.2.1", after: "same-2:1.2.2" },
    });
    const counters = await storedCounters(stub);
    expect(counters).toMatchObject({ creates: 1, starts: 1, waits: 2, revives: 1 });
  });
});

describe("replay: a journal whose object names were edited", () => {
  it("fails before running anything when a name is no object a call of the journal returned", async () => {
    for (const [n, name] of ['"zz#0"', '"9#0"', '"1.1#x"', "5"].entries()) {
      const id = `same-bad-${n}`;
      const { stub, done } = await resumedAfterEviction(
        id,
        `
          const job = await createJob({ name: "build" });
          const run = await job.start();
          const again = await job.current();
          const before = await again.wait(1);
          await approval("ship it?");
          return before.callId;
        `,
        (state) => {
          state.storage.sql.exec(
            "UPDATE dk_journal_entries SET payload = replace(payload, '\"1.1#0\"', ?) WHERE execution_id = ? AND call_key = '1.2'",
            name,
            id,
          );
        },
      );
      expect(done, name).toMatchObject({
        state: "failed",
        error: { code: "bridge/journal-corrupt", cause: { $error: { code: "journal/corrupt" } } },
      });
      // Read as a new object, the edited name would key the journaled wait elsewhere and run it
      // again: nothing of the first attempt ran twice.
      expect(await storedCounters(stub), name).toMatchObject({
        creates: 1,
        starts: 1,
        waits: 1,
        approvals: 1,
      });
    }
  });

  it("never hands the program an object of another kind than the journal recorded", async () => {
    const { stub, done } = await resumedAfterEviction(
      "same-edit",
      `
        const job = await createJob({ name: "build" });
        const run = await job.start();
        const again = await job.current();
        const seen = { tag: Object.prototype.toString.call(again), same: again === run };
        await approval("ship it?");
        return seen;
      `,
      // Call 1.2 now says it returned the job ("1#0", a Job) where the live run returned the run.
      (state) => {
        state.storage.sql.exec(
          "UPDATE dk_journal_entries SET payload = replace(payload, '\"1.1#0\"', '\"1#0\"') WHERE execution_id = 'same-edit' AND call_key = '1.2'",
        );
      },
    );
    // A Run, as recorded (a new one, since the name no longer says which); never the job.
    expect(done).toMatchObject({
      state: "completed",
      result: { tag: "[object codemode:jobs#Run]", same: false },
    });
    const counters = await storedCounters(stub);
    expect(counters).toMatchObject({ creates: 1, starts: 1 });
    expect(counters.disposals).toBe(counters.created);
  });
});
