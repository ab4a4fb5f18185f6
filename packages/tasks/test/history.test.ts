import { describe, expect, it } from "vitest";
import { isTruncatedValue, NonRetryableError, type TaskTruncatedValue } from "../src/index";
import { inFixture } from "./helpers";

describe("history()", () => {
  it("reads a run's snapshot, its decoded input and its journal together", async () => {
    await inFixture(async (fixture) => {
      const when = new Date(1_700_000_000_000);
      const tasks = fixture.build({
        "history@v1": async (input: { n: number; when: Date }, step) => {
          const doubled = await step.do("double", () => input.n * 2);
          await step.sleep("nap", 0);
          return { doubled, year: input.when.getUTCFullYear() };
        },
      });
      const { runId } = await tasks.run("history@v1", { n: 21, when });
      await fixture.settled(runId, tasks);
      const history = tasks.history(runId);
      expect(history).toMatchObject({
        run: { runId, state: "completed", result: { doubled: 42, year: 2023 } },
        input: { n: 21, when },
        steps: [
          { name: "double", kind: "do", state: "completed", result: 42 },
          { name: "nap", kind: "sleep", state: "completed" },
        ],
      });
      // The input keeps its codec types (a Date comes back a Date).
      expect((history?.input as { when?: unknown } | undefined)?.when).toBeInstanceOf(Date);
      expect(history?.steps).toEqual(tasks.steps(runId));
      expect(tasks.history("no-such-run")).toBeNull();
      expect(() => tasks.history("")).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
    });
  });
});

describe("history(runId, { maxValueBytes })", () => {
  it("stops returning step results whole once they reach maxTotalBytes, in step order", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "many@v1": async (_input: undefined, step) => {
          for (let i = 0; i < 10; i++) await step.do(`s${i}`, () => "x".repeat(100));
        },
      });
      const { runId } = await tasks.run("many@v1");
      await fixture.settled(runId, tasks);
      // Each result is 111 bytes stored (its JSON in the codec's envelope): three fit in 350.
      const bounded = tasks.history(runId, { maxValueBytes: 1_000, maxTotalBytes: 350 });
      const whole = bounded?.steps.map((step) => !isTruncatedValue(step.result));
      expect(whole).toEqual([true, true, true, false, false, false, false, false, false, false]);
      expect(bounded?.steps[3]?.result).toMatchObject({ bytes: 111 });
      expect(
        tasks
          .history(runId, { maxValueBytes: 1_000 })
          ?.steps.every((step) => step.result === "x".repeat(100)),
      ).toBe(true);
    });
  });

  it("answers each value over the bound as its size and preview, read by SQL without the value, and decodes the others", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build({
        "large@v1": async (input: { chars: number; pad: string }, step) => {
          const small = await step.do("small", () => ({ n: 1, at: new Date(0) }));
          const large = await step.do("large", () => "é".repeat(input.chars));
          await step.sleep("nap", 0);
          return { small, length: large.length, pad: input.pad };
        },
      });
      const { runId } = await tasks.run(
        "large@v1",
        { chars: 100_000, pad: "p".repeat(5_000) },
        { metadata: { note: "m".repeat(5_000) } },
      );
      await fixture.settled(runId, tasks);

      const mark = fixture.counter.mark();
      const bounded = tasks.history(runId, { maxValueBytes: 1_000 });
      // What SQL returned for the read: every value it gave back, summed in UTF-8 bytes.
      let returned = 0;
      for (const { query, bindings } of fixture.counter.log.slice(mark)) {
        for (const row of state.storage.sql.exec(query, ...bindings).raw()) {
          for (const value of row) {
            if (typeof value === "string") returned += new TextEncoder().encode(value).byteLength;
          }
        }
      }
      // 200 KB of step result, 5 KB of input, result and metadata each: about 2 KB read.
      expect(returned).toBeLessThan(4_000);

      const large = bounded?.steps[1]?.result;
      expect(isTruncatedValue(large)).toBe(true);
      // "é" is two UTF-8 bytes; stored, the JSON string (quoted) in the codec's 9-byte envelope.
      expect(large).toMatchObject({ bytes: 200_011, preview: `"${"é".repeat(255)}` });
      expect(JSON.stringify(large)).toBe(
        JSON.stringify({ bytes: 200_011, preview: `"${"é".repeat(255)}` }),
      );
      if (bounded?.run.state !== "completed") throw new Error("the run did not complete");
      for (const value of [bounded.input, bounded.run.result, bounded.run.metadata]) {
        expect(isTruncatedValue(value)).toBe(true);
        expect((value as TaskTruncatedValue).bytes).toBeGreaterThan(5_000);
      }
      // Under the bound: decoded as without it (a Date stays a Date).
      expect(bounded?.steps[0]?.result).toEqual({ n: 1, at: new Date(0) });
      expect(bounded?.steps.map((step) => [step.name, step.state])).toEqual([
        ["small", "completed"],
        ["large", "completed"],
        ["nap", "completed"],
      ]);
      const whole = tasks.history(runId);
      expect(whole?.steps[1]?.result).toBe("é".repeat(100_000));
      expect(bounded?.attempts).toEqual(whole?.attempts);

      // A bound above every value reads them all whole.
      expect(tasks.history(runId, { maxValueBytes: 1_000_000 })).toEqual(whole);
      expect(tasks.history("no-such-run", { maxValueBytes: 1_000 })).toBeNull();
      expect(() => tasks.history(runId, { maxValueBytes: 0 })).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
    });
  });

  it("keeps a failed step's error record whole under the bound", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "broken@v1": async (_input: undefined, step) => {
          await step.do("boom", () => {
            throw new NonRetryableError("b".repeat(2_000));
          });
        },
      });
      const { runId } = await tasks.run("broken@v1", undefined);
      await fixture.settled(runId, tasks);
      const step = tasks.history(runId, { maxValueBytes: 256 })?.steps[0];
      expect(step).toMatchObject({ state: "failed", error: { message: "b".repeat(2_000) } });
    });
  });
});
