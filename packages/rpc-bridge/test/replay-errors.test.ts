import { env } from "cloudflare:workers";
import { handle, JournalError, type JournalPort, JournalStore } from "@durablekit/handle-journal";
import { anotherInstance } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { type BridgeHostModule, Executor } from "../src/index";
import { replayJobsModule, replayModules } from "./fixtures/replay-modules";
import { freshReplay, inReplay, storedCounters } from "./helpers";

/** A journal whose writes fail from the `failFrom`-th on, as storage that gave out would. */
function failingJournal(store: JournalStore, failFrom: number): JournalPort {
  let writes = 0;
  return {
    lookup: (id) => store.lookup(id),
    record: (entry) => {
      if (++writes >= failFrom) {
        throw new JournalError("journal/storage", "Recording failed; retry.");
      }
      return store.record(entry);
    },
    resolve: (...args) => store.resolve(...args),
  };
}

describe("replay: errors from the journal underneath", () => {
  it("answers a call on a journaled object whose kind the deployed module no longer revives with bridge/not-replayable", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      const first = await i.executor.execute(
        `import { createJob } from "codemode:jobs";
         import { approval } from "test:replay";
         export default async function () {
           const job = await createJob({ name: "build" });
           const run = await job.start();
           await approval("go?");
           return await run.status().then(() => "ran", (e) => ({ name: e.name, code: e.code }));
         }`,
        undefined,
        { id: "no-reviver" },
      );
      // A deploy whose jobs module revives Jobs but no longer Runs.
      const jobs = replayJobsModule(i.counters, 1);
      const { Run: _dropped, ...revive } = (jobs as Record<symbol, Record<string, unknown>>)[
        handle.revive
      ] as Record<string, unknown>;
      const deployed = new Executor(anotherInstance(state), {
        loader: env.LOADER,
        modules: {
          ...replayModules(i.counters, 1),
          "codemode:jobs": { ...jobs, [handle.revive]: revive } as unknown as BridgeHostModule,
        },
        onInterrupt: "replay",
      });
      const done = await deployed.resume("no-reviver", true);
      return { first: first.state, done };
    });
    expect(out.first).toBe("interrupted");
    expect(out.done).toMatchObject({
      state: "completed",
      result: { name: "BridgeError", code: "bridge/not-replayable" },
    });
    expect(await storedCounters(stub)).toMatchObject({ creates: 1, starts: 1 });
  });

  it("ends a run whose journal write fails with bridge/storage, the journal's error as its cause", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      const journal = failingJournal(new JournalStore(state), 2);
      const done = await i.executor.execute(
        `import { echo } from "test:replay";
         export default async function () {
           await echo(1);
           await echo(2);
           return "never";
         }`,
        undefined,
        { id: "write-fails", journal },
      );
      return { done, stored: i.executor.get("write-fails")?.error };
    });
    const expected = {
      code: "bridge/storage",
      retryable: true,
      cause: { $error: { name: "JournalError", code: "journal/storage" } },
    };
    expect(out.done).toMatchObject({ state: "failed", error: expected });
    expect(out.stored).toMatchObject(expected);
  });

  it("refuses a resume whose journal fails with bridge/storage, the journal's error as its cause", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      const store = new JournalStore(state);
      await i.executor.execute(
        `import { approval } from "test:replay";
         export default async function () { return await approval("go?"); }`,
        undefined,
        { id: "resume-fails", journal: store },
      );
      const broken: JournalPort = {
        lookup: () => {
          throw new JournalError("journal/storage", "Reading failed; retry.");
        },
        record: (entry) => store.record(entry),
        resolve: (...args) => store.resolve(...args),
      };
      return i.executor.resume("resume-fails", true, { journal: broken }).then(
        () => null,
        (error: { code?: string; cause?: { code?: string } }) => ({
          code: error.code,
          cause: error.cause?.code,
        }),
      );
    });
    expect(out).toEqual({ code: "bridge/storage", cause: "journal/storage" });
  });

  it("refuses a call on an object whose reviver returns a promise with bridge/not-replayable and disposes what it made", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      await i.executor.execute(
        `import { createJob } from "codemode:jobs";
         import { approval } from "test:replay";
         export default async function () {
           const job = await createJob({ name: "build" });
           const run = await job.start();
           await approval("go?");
           return await run.status().then(() => "ran", (e) => ({ code: e.code, message: e.message }));
         }`,
        undefined,
        { id: "async-reviver" },
      );
      const jobs = replayJobsModule(i.counters, 1);
      const revive = (jobs as Record<symbol, Record<string, (value: unknown) => unknown>>)[
        handle.revive
      ] as Record<string, (value: unknown) => unknown>;
      const deployed = new Executor(anotherInstance(state), {
        loader: env.LOADER,
        modules: {
          ...replayModules(i.counters, 1),
          "codemode:jobs": {
            ...jobs,
            [handle.revive]: { ...revive, Run: async (value: unknown) => revive.Run?.(value) },
          } as unknown as BridgeHostModule,
        },
        onInterrupt: "replay",
      });
      const before = i.counters.read().disposals ?? 0;
      const done = await deployed.resume("async-reviver", true);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return { done, disposed: (i.counters.read().disposals ?? 0) - before };
    });
    expect(out.done).toMatchObject({
      state: "completed",
      result: { code: "bridge/not-replayable" },
    });
    expect((out.done.result as { message: string }).message).toMatch(/synchronously/);
    // The Run the promise made is disposed (the Job was never revived).
    expect(out.disposed).toBe(1);
    expect(await storedCounters(stub)).toMatchObject({ starts: 1, revives: 1 });
  });
});
