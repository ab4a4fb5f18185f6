import { JournalStore } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import { freshReplay, inReplay, storedCounters } from "./helpers";

/** Runs `program` to its interrupt, resumes it with `true`, and answers how it ended. */
async function resumed(
  program: string,
  options: { access?: "read" | "read-write"; limits?: Record<string, number> } = {},
) {
  const stub = freshReplay();
  const out = await inReplay(stub, async (i) => {
    const executor = i.create(options.limits === undefined ? {} : { limits: options.limits });
    const first = await executor.execute(program, undefined, {
      id: "refusals",
      ...(options.access === undefined ? {} : { access: options.access }),
    });
    const done = await executor.resume("refusals", true);
    return { first: first.state, done };
  });
  return { ...out, counters: await storedCounters(stub) };
}

describe("replay: a refused call runs no host code", () => {
  it("refuses a write method of a journaled object in a read run without reviving the object", async () => {
    const out = await resumed(
      `import { findJob } from "codemode:jobs";
       import { askRead } from "test:replay";
       export default async function () {
         const job = await findJob("j1");
         await askRead("go?");
         return await job.start().then(() => "started", (e) => e.code);
       }`,
      { access: "read" },
    );
    expect(out.first).toBe("interrupted");
    expect(out.done).toMatchObject({ state: "completed", result: "bridge/access-denied" });
    expect(out.counters).toMatchObject({ finds: 1, approvals: 1 });
    expect(out.counters.revives).toBeUndefined();
    expect(out.counters.starts).toBeUndefined();
  });

  it("lets a read run call a read-only method of a journaled object, reviving it for that call", async () => {
    const out = await resumed(
      `import { findRun } from "codemode:jobs";
       import { askRead } from "test:replay";
       export default async function () {
         const run = await findRun("r1");
         await askRead("go?");
         return await run.status();
       }`,
      { access: "read" },
    );
    expect(out.done).toMatchObject({
      state: "completed",
      result: { id: "r1", status: "running" },
    });
    expect(out.counters).toMatchObject({ finds: 1, revives: 1 });
  });

  it("refuses a call past maxCalls on a journaled object without reviving the object", async () => {
    const out = await resumed(
      `import { createJob } from "codemode:jobs";
       import { approval } from "test:replay";
       export default async function () {
         const job = await createJob({ name: "build" });
         await approval("go?");
         return await job.info().then(() => "ran", (e) => e.code);
       }`,
      { limits: { maxCalls: 2 } },
    );
    expect(out.done).toMatchObject({ state: "completed", result: "bridge/limit-calls" });
    expect(out.counters).toMatchObject({ creates: 1, approvals: 1 });
    expect(out.counters.revives).toBeUndefined();
  });

  it("refuses a callback passed beside a journaled object without reviving the object", async () => {
    const out = await resumed(
      `import { createJob } from "codemode:jobs";
       import { approval, echo } from "test:replay";
       export default async function () {
         const job = await createJob({ name: "build" });
         await approval("go?");
         return await echo([job, (n) => n]).then(() => "ran", (e) => e.code);
       }`,
    );
    expect(out.done).toMatchObject({ state: "completed", result: "bridge/not-replayable" });
    expect(out.counters.revives).toBeUndefined();
    expect(out.counters.echoes).toBeUndefined();
  });
});

describe("replay: limits count across resumes", () => {
  it("counts the bytes of replayed calls toward maxTotalBytes after a resume", async () => {
    const out = await resumed(
      `import { createJob } from "codemode:jobs";
       import { approval, echo } from "test:replay";
       export default async function () {
         const job = await createJob({ name: "n".repeat(1000) });
         await echo("x".repeat(1000));
         await approval("go?");
         return await echo("y".repeat(1000)).then(() => "ran", (e) => e.code);
       }`,
      // The calls before the interrupt take about 3,200 bytes; the last one asks 1,000 more.
      { limits: { maxTotalBytes: 4000 } },
    );
    expect(out.first).toBe("interrupted");
    expect(out.done).toMatchObject({ state: "completed", result: "bridge/too-large" });
    expect(out.counters).toMatchObject({ creates: 1, echoes: 1, approvals: 1 });
  });

  it("counts the objects replayed calls returned toward maxHandles after a resume", async () => {
    const out = await resumed(
      `import { createJob } from "codemode:jobs";
       import { approval } from "test:replay";
       export default async function () {
         await createJob({ name: "a" });
         await createJob({ name: "b" });
         await approval("go?");
         return await createJob({ name: "c" }).then(() => "ran", (e) => e.code);
       }`,
      { limits: { maxHandles: 2 } },
    );
    expect(out.first).toBe("interrupted");
    expect(out.done).toMatchObject({ state: "completed", result: "bridge/limit-handles" });
    expect(out.counters).toMatchObject({ creates: 3 });
  });

  it("counts the refusals a resumed run replays: at most maxCalls refused calls are journaled in a run", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      const limits = { maxCalls: 100 };
      const program = `
        import { createJob } from "codemode:jobs";
        import { askRead } from "test:replay";
        export default async function () {
          let refused = 0;
          for (let i = 0; i < 60; i++) await createJob({ name: "n" }).catch(() => refused++);
          await askRead("go?");
          for (let i = 0; i < 60; i++) await createJob({ name: "n" }).catch(() => refused++);
          return refused;
        }`;
      const first = await i
        .create({ limits })
        .execute(program, undefined, { id: "refusals", access: "read" });
      const done = await i.create({ limits }).resume("refusals", true);
      const entries = new JournalStore(state).entries("refusals");
      return { first: first.state, done, refusals: entries.filter((e) => e.outcome === "error") };
    });
    expect(out.first).toBe("interrupted");
    expect(out.done).toMatchObject({ state: "completed", result: 120 });
    // 100 refusals journaled, as in a run never interrupted; the last 20 were refused unkeyed.
    expect(out.refusals).toHaveLength(100);
  });
});
