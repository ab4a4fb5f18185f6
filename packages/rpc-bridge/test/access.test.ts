import { describe, expect, it } from "vitest";
import { countersOf, freshFixture, run } from "./helpers";

describe("access", () => {
  it('refuses a write method on a returned object in an access "read" run before it runs', async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { make } from "test:probe";
       export default async function () {
         const probe = await make();
         const read = await probe.read();
         try { await probe.write(); return "wrote"; }
         catch (e) { return { read, name: e.name, code: e.code }; }
       }`,
      undefined,
      { access: "read" },
    );
    expect(execution.result).toEqual({
      read: "read",
      name: "BridgeError",
      code: "bridge/access-denied",
    });
    const counters = await countersOf(stub);
    expect(counters.reads).toBe(1);
    expect(counters.writes).toBe(0);
  });

  it('refuses an exported function that is not read-only in an access "read" run', async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { write, counters } from "test:probe";
       export default async function () {
         try { await write(); return "wrote"; } catch (e) { return [e.code, (await counters()).writes]; }
       }`,
      undefined,
      { access: "read" },
    );
    expect(execution.result).toEqual(["bridge/access-denied", 0]);
  });

  it("refuses the jobs API's createJob and start (writes) in a read run, while info, status and wait run", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { createJob, findJob, findRun } from "codemode:jobs";
       export default async function () {
         const codes = [];
         try { await createJob({ name: "x" }); } catch (e) { codes.push(e.code); }
         const job = await findJob("job-1");
         const info = await job.info();
         try { await job.start({}); } catch (e) { codes.push(e.code); }
         const old = await findRun("run-1");
         return { codes, info: info.id, status: (await old.status()).status, waited: (await old.wait()).status };
       }`,
      undefined,
      { access: "read" },
    );
    expect(execution.result).toEqual({
      codes: ["bridge/access-denied", "bridge/access-denied"],
      info: "job-1",
      status: "succeeded",
      waited: "succeeded",
    });
    const counters = await countersOf(stub);
    expect(counters.jobsCreated).toBe(0);
    expect(counters.runsStarted).toBe(0);
    expect(counters.waits).toBe(1);
  });

  it("runs the same write method when the run has read-write access", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `import { make } from "test:probe";
       export default async function () { const probe = await make(); return probe.write(); }`,
    );
    expect(execution.result).toBe("written");
    expect((await countersOf(stub)).writes).toBe(1);
  });
});
