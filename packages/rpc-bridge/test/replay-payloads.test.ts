import { JournalStore } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import { freshReplay, inReplay, storedCounters } from "./helpers";

const MiB = 1024 * 1024;

const BIG_INTERRUPT = `
  import { interruptWith, echo } from "test:replay";
  export default async function (size) {
    const answer = await interruptWith(size);
    return { answer, after: await echo("after") };
  }
`;

// SQLite refuses a row over 2 MB in production and over about 9 MB in local workerd: 10 MiB
// values fail in both unless they are split over rows.
describe("replay: payloads larger than a row", () => {
  it("releases a run at a 12 MiB interrupt payload (stored over several rows) and resumes it", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i) => {
      const executor = i.create({ limits: { maxInterruptBytes: 16 * MiB } });
      const first = await executor.execute(BIG_INTERRUPT, 12 * MiB, { id: "big-1" });
      const stored = executor.get("big-1");
      const done = await i
        .create({ limits: { maxInterruptBytes: 16 * MiB } })
        .resume("big-1", "approved");
      return {
        state: first.state,
        payloadChars: (first.interrupt?.payload as { blob?: string } | undefined)?.blob?.length,
        storedState: stored?.state,
        storedChars: (stored?.interrupt?.payload as { blob: string } | undefined)?.blob.length,
        done,
      };
    });
    expect(out).toEqual({
      state: "interrupted",
      payloadChars: 12 * MiB,
      storedState: "interrupted",
      storedChars: 12 * MiB,
      done: {
        executionId: "big-1",
        state: "completed",
        result: { answer: "approved", after: "after" },
      },
    });
    expect(await storedCounters(stub)).toMatchObject({ bigInterrupts: 1, echoes: 1 });
  });

  it("refuses an interrupt payload over maxInterruptBytes to the host code with bridge/too-large and does not release the run", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      const done = await i.executor.execute(BIG_INTERRUPT, 12 * MiB, { id: "big-2" });
      const entries = new JournalStore(state).entries("big-2").map((e) => [e.key, e.outcome]);
      return { done, entries, row: i.executor.get("big-2")?.state };
    });
    expect(out.done).toEqual({
      executionId: "big-2",
      state: "completed",
      result: { answer: { refused: "bridge/too-large" }, after: "after" },
    });
    expect(out.row).toBe("completed");
    expect(out.entries).toEqual([
      ["1", "value"],
      ["2", "value"],
    ]);
  });

  it("stores a result, a program error, a resume value and an object's JSON of 10 MiB each, past what a row holds", async () => {
    const stub = freshReplay();
    const limits = {
      maxResultBytes: 12 * MiB,
      maxInputBytes: 12 * MiB,
      maxRequestBytes: 12 * MiB,
      maxResponseBytes: 12 * MiB,
      maxTotalBytes: 64 * MiB,
    };
    const out = await inReplay(stub, async (i) => {
      const executor = i.create({ limits });
      const result = await executor.execute(
        `export default async function (n) { return "r".repeat(n); }`,
        10 * MiB,
        { id: "big-result" },
      );
      const error = await executor.execute(
        `export default async function (n) { throw new Error("e".repeat(n)); }`,
        10 * MiB,
        { id: "big-error" },
      );
      const first = await executor.execute(
        `import { createJob } from "codemode:jobs";
         import { approval } from "test:replay";
         export default async function (n) {
           const job = await createJob({ name: "j".repeat(n) });
           const value = await approval("big?");
           return { value: value.length, name: (await job.info()).name.length };
         }`,
        10 * MiB,
        { id: "big-resume" },
      );
      const resumed = await i.create({ limits }).resume("big-resume", "v".repeat(10 * MiB));
      const stored = {
        result: (executor.get("big-result")?.result as string | undefined)?.length,
        error: executor.get("big-error")?.error?.message.length,
        resumed: executor.get("big-resume")?.result,
      };
      return {
        result: (result.result as string).length,
        error: error.error?.message.length,
        first: first.state,
        resumed,
        stored,
      };
    });
    expect(out).toEqual({
      result: 10 * MiB,
      error: 10 * MiB,
      first: "interrupted",
      resumed: {
        executionId: "big-resume",
        state: "completed",
        result: { value: 10 * MiB, name: 10 * MiB },
      },
      stored: { result: 10 * MiB, error: 10 * MiB, resumed: { value: 10 * MiB, name: 10 * MiB } },
    });
    expect(await storedCounters(stub)).toMatchObject({ creates: 1, approvals: 1, revives: 1 });
  });
});

const TAG = "\u0000dk";

describe("replay: resume values", () => {
  it("refuses a resume value the bridge cannot carry (its reserved key) and keeps the run resumable", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i) => {
      const first = await i.executor.execute(
        `import { approval } from "test:replay";
         export default async function () { return { answer: await approval("ok?") }; }`,
        undefined,
        { id: "tagged-resume" },
      );
      const refusals = [];
      for (const value of [{ [TAG]: "halt" }, { list: [{ [TAG]: "t", id: 1 }] }]) {
        refusals.push(
          await i.executor.resume("tagged-resume", value).then(
            (execution) => execution.state,
            (error: { code?: string }) => error.code,
          ),
        );
      }
      const between = i.executor.get("tagged-resume")?.state;
      const done = await i.executor.resume("tagged-resume", { fine: true });
      return { first: first.state, refusals, between, done };
    });
    expect(out).toEqual({
      first: "interrupted",
      refusals: ["bridge/unserializable", "bridge/unserializable"],
      between: "interrupted",
      done: {
        executionId: "tagged-resume",
        state: "completed",
        result: { answer: { fine: true } },
      },
    });
    expect(await storedCounters(stub)).toMatchObject({ approvals: 1 });
  });
});
