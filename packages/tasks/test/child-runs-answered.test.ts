import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskChildOutcome } from "../src/index";
import { fan, retry, type Shard, settle, world } from "./child-helpers";

/**
 * A child that runs without I/O settles before its start is answered: its start's reply carries
 * its settlement, and the parent applies it at once, as its delivery would be applied (proof,
 * content, first settlement wins), so the step that awaits it does not park. The settlement stays
 * owed and is delivered all the same: the parent acknowledges that copy as one it already applied.
 */
describe("child runs: a settlement that comes with its start's answer", { timeout: 30_000 }, () => {
  it("applies it at once: the await does not park, and the delivery after is a duplicate", async () => {
    const { prefix, parent, children } = world(3);
    const runId = await fan(parent, { shards: 3, prefix, definition: "quick@v1" });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    expect(
      (run.result as TaskChildOutcome[]).map((o) => (o as { result?: unknown }).result),
    ).toEqual([0, 3, 6]);
    // The await found every child settled: the parent never waited.
    const waits = await parent().eventsOf("task:waiting");
    expect(waits.filter((e) => (e as { runId?: string }).runId === runId)).toEqual([]);
    // Each settlement applied once, from the start's reply; its delivery came after and changed nothing.
    const settled = await parent().eventsOf("task:child:settled");
    expect(settled.filter((e) => (e as { runId?: string }).runId === runId)).toHaveLength(3);
    const applied = await parent().counts();
    for (const [i, child] of children.entries()) {
      const [childRunId] = await retry(child, (c) => c.childRunsOf(runId, `start ${i}`));
      expect(applied[`applied:${childRunId}`]).toBeUndefined();
      expect(await retry(child, (c) => c.outbox())).toBe(0);
    }
    expect((await parent().receivedCalls()).filter((call) => call.kind === "settled")).toHaveLength(
      3,
    );
  });

  it("answers a whole object's batch of starts with their settlements: a wide fan-out completes without parking", async () => {
    const { prefix, parent } = world(0);
    const shards = Array.from(
      { length: 2 },
      (_, i) => (): Shard => env.SHARD.getByName(`${prefix}-${i}`),
    );
    const { runId } = await retry(parent, (p) =>
      p.start("many@v1", { shards: 8, prefix, objects: 2, definition: "quick@v1" }),
    );
    const run = await settle(parent, runId, shards);
    expect(run.state).toBe("completed");
    expect(
      (run.result as TaskChildOutcome[]).map((o) => (o as { result?: unknown }).result),
    ).toEqual(Array.from({ length: 8 }, (_, i) => i * 3));
    const waits = await parent().eventsOf("task:waiting");
    expect(waits.filter((e) => (e as { runId?: string }).runId === runId)).toEqual([]);
  });

  it("keeps an answer as small as a delivery batch: settlements past 4 MiB in all come as messages of their own", async () => {
    const { prefix, parent } = world(0);
    const shard = (): Shard => env.SHARD.getByName(`${prefix}-0`);
    // Six results of about 800,000 characters each (every quote escaped): not all fit one answer.
    const { runId } = await retry(parent, (p) =>
      p.start("many@v1", {
        shards: 6,
        prefix,
        objects: 1,
        definition: "quotes@v1",
        quotes: 400_000,
      }),
    );
    const run = await settle(parent, runId, [shard]);
    expect(run, JSON.stringify(run).slice(0, 600)).toMatchObject({ state: "completed" });
    expect(run.result).toEqual(Array(6).fill({ state: "completed", length: 400_000 }));
    // Some came with the answer, the rest by delivery: the await waited for those.
    const waits = await parent().eventsOf("task:waiting");
    expect(waits.filter((e) => (e as { runId?: string }).runId === runId)).toHaveLength(1);
  });

  it("answers a start retried after its answer was lost with the same child and its settlement: applied once", async () => {
    const { prefix, parent, children } = world(1);
    const shard = children[0] as () => Shard;
    // The shard restarts the parent once it has answered the start: the parent never reads the
    // answer, and retries the start, which joins the same (settled) child.
    await retry(shard, (s) => s.arm("after-start"));
    const runId = await fan(parent, { shards: 1, prefix, definition: "quick@v1" });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    expect((run.result as TaskChildOutcome[])[0]).toMatchObject({ state: "completed", result: 0 });
    expect(await retry(shard, (s) => s.childRunsOf(runId, "start 0"))).toHaveLength(1);
  });

  for (const fault of [
    "answer-other-child",
    "answer-wrong-secret",
    "answer-malformed",
    "answer-bad-result",
  ]) {
    it(`ignores a reply's settlement that is not its child's own (${fault}): the real one is applied from its delivery`, async () => {
      const { prefix, parent, children } = world(1);
      const shard = children[0] as () => Shard;
      await retry(shard, (s) => s.arm(fault));
      const runId = await fan(parent, { shards: 1, prefix, definition: "quick@v1" });
      const run = await settle(parent, runId, children);
      expect(run.state).toBe("completed");
      const [outcome] = run.result as TaskChildOutcome[];
      expect(outcome).toMatchObject({ state: "completed", result: 0 });
      // What the reply carried changed nothing: the await parked until the delivery came.
      const waits = await parent().eventsOf("task:waiting");
      expect(waits.filter((e) => (e as { runId?: string }).runId === runId)).toHaveLength(1);
      const [childRunId] = await retry(shard, (s) => s.childRunsOf(runId, "start 0"));
      expect((await parent().counts())[`applied:${childRunId}`]).toBe(1);
    });
  }
});
