import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskChildOutcome } from "../src/index";
import { retry, type Shard, settle, world } from "./child-helpers";

/**
 * What a fan-out costs in statements, in the objects on both sides: the parent records its intents
 * in one statement, and applies the settlements one object owes it in
 * one transaction that counts the wait down once; a child's settlement leaves without a write of
 * its own (its lease was written with it). Every statement is a call into SQLite; a fan-out of
 * thousands pays each one per child.
 */
describe("child runs: statements per fan-out", () => {
  it("starts six children in one object with one intent insert, and applies their six settlements with one countdown", async () => {
    const { prefix, parent } = world(0);
    const shard = (): Shard => env.SHARD.getByName(`${prefix}-0`);
    const { runId } = await retry(parent, (p) =>
      p.start("many@v1", { shards: 6, prefix, objects: 1 }),
    );
    const run = await settle(parent, runId, [shard]);
    expect(run.state).toBe("completed");
    expect((run.result as TaskChildOutcome[]).map((o) => o.state)).toEqual(
      Array(6).fill("completed"),
    );
    // The six settlements came in one call, and were applied together.
    expect(await parent().receivedCalls()).toContainEqual({ kind: "batch", messages: 6 });
    expect(await parent().statementsLike("^INSERT INTO dk_tasks_children")).toBe(1);
    expect(await parent().statementsLike("^UPDATE dk_tasks_child_waits SET remaining")).toBe(1);
    // The child object leased none of its settlements before sending them: each was queued leased.
    expect(await shard().statementsLike("^UPDATE dk_tasks_outbox SET attempts")).toBe(0);
    expect(await shard().statementsLike("^INSERT INTO dk_tasks_outbox")).toBe(6);
    expect(await shard().outbox()).toBe(0);
  });

  it("reschedules a first delivery that failed after 1 s (its 5 s lease was only for leaving at once), and delivers it then", async () => {
    const { prefix, parent } = world(0);
    const shard = (): Shard => env.SHARD.getByName(`${prefix}-0`);
    // The parent restarts before it applies the first settlement it receives: the call fails.
    await retry(parent, (p) => p.arm("before-apply"));
    const { runId } = await retry(parent, (p) =>
      p.start("many@v1", { shards: 1, prefix, objects: 1 }),
    );
    let rows: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      rows = await retry(shard, (s) =>
        s.rowsOf(
          "SELECT attempts, next_at - created_at AS wait FROM dk_tasks_outbox WHERE next_at - created_at < 5000",
        ),
      );
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(rows).toHaveLength(1);
    expect(rows[0]?.attempts).toBe(1);
    expect(rows[0]?.wait as number).toBeGreaterThanOrEqual(1000);
    const run = await settle(parent, runId, [shard]);
    expect(run.state).toBe("completed");
  });
});
