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
