import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("composed with @durablekit/streams", () => {
  it("appends each step's chunk exactly once across a reset in the middle of a step", async () => {
    const name = `t-${crypto.randomUUID()}`;
    let stub = env.FIXTURE.getByName(name);
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("producer@v1", { streamId: "log", chunks: 5 });
      for (let i = 0; i < 200 && !fixture.executions()["chunk-2"]; i++) await sleep(2);
      // chunk-2 appended, then hangs: its append is durable, its step result is not.
      expect(fixture.streams.status("log")?.cursor).toBe(3);
      return runId;
    }, stub);
    await abortAllDurableObjects();
    stub = env.FIXTURE.getByName(name);
    await sleep(350);
    await runDurableObjectAlarm(stub);
    await inFixture(async (fixture) => {
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", result: 5, attempt: 2 });
      // chunk-2's step ran twice; its second append was answered as the producer's duplicate.
      expect(fixture.executions()).toEqual({
        "chunk-0": 1,
        "chunk-1": 1,
        "chunk-2": 2,
        "chunk-3": 1,
        "chunk-4": 1,
      });
      const chunks: unknown[] = [];
      for await (const { seq, chunk } of fixture.streams.read("log"))
        chunks.push({ seq, ...(chunk as object) });
      expect(chunks).toEqual([
        { seq: 0, i: 0, attempt: 1 },
        { seq: 1, i: 1, attempt: 1 },
        { seq: 2, i: 2, attempt: 1 },
        { seq: 3, i: 3, attempt: 1 },
        { seq: 4, i: 4, attempt: 1 },
      ]);
      expect(fixture.streams.status("log")).toMatchObject({ state: "completed", cursor: 5 });
      expect(fixture.tasks.steps(runId)?.find((step) => step.name === "chunk-2")).toMatchObject({
        attempt: 2,
        result: 2,
      });
    }, stub);
  });
});
