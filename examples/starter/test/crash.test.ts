import { env } from "cloudflare:test";
import { crashEverywhere } from "@durablekit/testing";
import { describe, expect, it } from "vitest";

describe("count@v1 under crashes", () => {
  it("settles the same and writes each chunk once whatever boundary the object dies at", async () => {
    // Each run (the uninterrupted one, then one per boundary and side) gets a fresh object.
    const report = await crashEverywhere({
      namespace: env.CRASH_COUNTERS,
      tasks: (counter) => counter.tasks,
      start: (counter) => counter.start(3),
      // The run's stream, under one key for every run (each run names its stream after its id).
      streams: (counter, runId) => ({
        count: counter.streams.readPage(`count:${runId}`).chunks.map((c) => c.chunk),
      }),
    });
    expect(report.problems).toEqual([]);
    expect(report.baseline).toMatchObject({ state: "completed", result: { written: 3 } });
    expect(report.boundaries.map((b) => b.label)).toEqual([
      "do:chunk-0",
      "do:chunk-1",
      "do:chunk-2",
      "do:close",
      "settle",
    ]);
    // A crash before and after each step boundary, and before the settle (nothing runs after it).
    expect(report.cases).toHaveLength(9);
    expect(report.cases.every((c) => c.ok)).toBe(true);
  });
});
