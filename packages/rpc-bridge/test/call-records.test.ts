import { describe, expect, it } from "vitest";
import { describeCalls } from "../src/index";
import { freshReplay, inReplay } from "./helpers";

describe("Executor.calls: a replay run's journal, decoded for reading", () => {
  it("lists each call with its module, method, outcome, coded error, sizes and the kinds of objects it returned", async () => {
    const stub = freshReplay();
    const calls = await inReplay(stub, async (instance) => {
      const execution = await instance.executor.execute(
        `import { createJob } from "codemode:jobs";
         import { echo, fail } from "test:replay";
         export default async () => {
           await echo("hello");
           try { await fail(); } catch {}
           const job = await createJob({ name: "build" });
           await job.start();
           return "done";
         };`,
        undefined,
        { id: "described" },
      );
      expect(execution.state).toBe("completed");
      return instance.executor.calls("described");
    });
    expect(calls.map((c) => [c.key, c.seq, c.module, c.method, c.outcome])).toEqual([
      ["1", 1, "test:replay", "echo", "value"],
      ["2", 2, "test:replay", "fail", "error"],
      ["3", 3, "codemode:jobs", "createJob", "handle"],
      ["3.1", 4, "codemode:jobs#Job", "start", "handle"],
    ]);
    expect(calls[1]?.error).toEqual({
      name: "TypeError",
      message: "no such job",
      code: "E_NO_JOB",
    });
    expect(calls[2]?.handles).toEqual(["codemode:jobs#Job"]);
    expect(calls[3]?.handles).toEqual(["codemode:jobs#Run"]);
    expect(calls.every((c) => c.bytes > 0 && c.at > 0 && c.refused === false)).toBe(true);
    expect(calls[0]?.error).toBeUndefined();
  });

  it("answers [] for an execution with no journal, refuses a bad id, and marks a payload it cannot read", async () => {
    const stub = freshReplay();
    await inReplay(stub, (instance) => {
      expect(instance.executor.calls("never-ran")).toEqual([]);
      expect(() => instance.executor.calls(7 as never)).toThrow(/execution id/);
      expect(() => instance.executor.calls("x", { journal: {} as never })).toThrow(/lookup/);
    });
    const entry = {
      executionId: "e",
      key: "1",
      seq: 1,
      module: "m",
      method: "f",
      argsDigest: "d",
      outcome: "value" as const,
      payload: "{not codec text",
      recordedAt: 5,
    };
    expect(describeCalls([entry])).toEqual([
      {
        key: "1",
        seq: 1,
        module: "m",
        method: "f",
        outcome: "value",
        at: 5,
        bytes: 15,
        charged: 0,
        handles: [],
        refused: false,
        unreadable: true,
      },
    ]);
  });
});

describe("Executor.list: the executions it recorded, newest first", () => {
  it("pages them by state with a next token, each with its record and a replay run's fingerprint", async () => {
    const stub = freshReplay();
    const pages = await inReplay(stub, async (instance) => {
      const { executor } = instance;
      const program = `import { echo } from "test:replay"; export default async () => echo(1);`;
      for (let i = 0; i < 5; i++) {
        await executor.execute(program, undefined, { id: `listed-${i}` });
        // Distinct creation times: the list is ordered by them.
        await scheduler.wait(2);
      }
      await executor.execute(`export default async () => { throw new Error("no"); };`, undefined, {
        id: "listed-failed",
        onInterrupt: "fail",
      });
      const first = executor.list({ limit: 2 });
      const second = executor.list({ limit: 2, cursor: first.next ?? undefined });
      const rest = executor.list({ limit: 10, cursor: second.next ?? undefined });
      return {
        ids: [...first.items, ...second.items, ...rest.items].map((r) => r.executionId),
        lastNext: rest.next,
        failed: executor.list({ state: "failed" }).items.map((r) => r.executionId),
        completed: executor.list({ state: ["completed"], limit: 1000 }).items.length,
        fingerprint: executor.get("listed-0")?.fingerprint,
        plain: executor.get("listed-failed")?.fingerprint,
        listedEqualsGet:
          JSON.stringify(first.items[0]) ===
          JSON.stringify(executor.get(first.items[0]?.executionId ?? "")),
      };
    });
    expect(pages.ids).toEqual([
      "listed-failed",
      "listed-4",
      "listed-3",
      "listed-2",
      "listed-1",
      "listed-0",
    ]);
    expect(pages.lastNext).toBeNull();
    expect(pages.failed).toEqual(["listed-failed"]);
    expect(pages.completed).toBe(5);
    expect(pages.fingerprint).toMatchObject({
      compatibilityDate: expect.any(String),
      program: expect.stringMatching(/^[0-9a-f]+$/),
    });
    expect(pages.plain).toBeUndefined();
    expect(pages.listedEqualsGet).toBe(true);
  });

  it("refuses a bad state, limit or cursor", async () => {
    const stub = freshReplay();
    await inReplay(stub, (instance) => {
      const { executor } = instance;
      expect(() => executor.list({ state: "done" as never })).toThrow(/state must be one of/);
      expect(() => executor.list({ limit: 0 })).toThrow(/limit/);
      expect(() => executor.list({ cursor: "forged" })).toThrow(/cursor/);
    });
  });
});
