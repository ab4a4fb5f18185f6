import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { encode } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import type { TaskChildOutcome } from "../src/index";
import {
  childRun,
  expectOnce,
  fan,
  type Parent,
  retry,
  type Shard,
  type Snapshot,
  settle,
  token,
  world,
} from "./child-helpers";
import type { ParentObject } from "./fixtures/child-objects";
import { sleep } from "./helpers";

// Faults restart objects and deliveries back off (1 s, doubling): these tests take seconds.
describe("child runs: a run starts runs in other objects and awaits them", {
  timeout: 30_000,
}, () => {
  it("fans out to three objects and fans in their results, each child run once", async () => {
    const { prefix, parent, children } = world(3);
    const runId = await fan(parent, { shards: 3, prefix });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    await expectOnce(parent, runId, children, run.result as TaskChildOutcome[]);
    const known = await parent().childrenOf(runId);
    expect(known?.map((c) => [c.step, c.state, c.target?.binding])).toEqual([
      ["start 0", "completed", "SHARD"],
      ["start 1", "completed", "SHARD"],
      ["start 2", "completed", "SHARD"],
    ]);
    expect(known?.map((c) => c.runId)).toEqual(
      (run.result as TaskChildOutcome[]).map((o) => o.runId),
    );
    expect(await parent().childrenOf("no-such-run")).toBeNull();
    // The await parks once at most and is woken once, by the last settlement: two attempts at most.
    expect(await parent().attemptsOf(runId)).toBeLessThanOrEqual(2);
  });

  const faults: Array<[string, "parent" | "child", string]> = [
    ["before the start call", "parent", "before-start"],
    ["after the start call, before the parent journaled it", "child", "after-start"],
    ["after the child settled, before its settlement was applied", "parent", "before-apply"],
    ["after the settlement was applied, before the child heard so", "parent", "after-apply"],
  ];
  for (const [when, where, fault] of faults) {
    it(`restarts the parent ${when}: one child run per key, the parent settles with the child's result, the settlement applied once`, async () => {
      const { prefix, parent, children } = world(2);
      if (where === "parent") await parent().arm(fault);
      else await (children[0] as () => Shard)().arm(fault);
      const runId = await fan(parent, { shards: 2, prefix });
      const run = await settle(parent, runId, children);
      expect(run.state).toBe("completed");
      await expectOnce(parent, runId, children, run.result as TaskChildOutcome[]);
    });
  }

  it("restarts every object at once (abortAllDurableObjects) as soon as the fan-out started: one child run per key, each settlement applied once", async () => {
    const { prefix, parent, children } = world(3);
    const runId = await fan(parent, { shards: 3, prefix });
    await abortAllDurableObjects();
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    await expectOnce(parent, runId, children, run.result as TaskChildOutcome[]);
  });

  it("restarts a child in the middle of its run: its step runs again after the restart, once to completion", async () => {
    const { prefix, parent, children } = world(2);
    await (children[1] as () => Shard)().arm("mid-run");
    const runId = await fan(parent, { shards: 2, prefix });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    await expectOnce(parent, runId, children, run.result as TaskChildOutcome[]);
  });

  it("restarts a child in the middle of its notification: delivered again, applied once", async () => {
    const { prefix, parent, children } = world(2);
    await parent().arm("child-after-ack");
    const runId = await fan(parent, { shards: 2, prefix });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    await expectOnce(parent, runId, children, run.result as TaskChildOutcome[]);
  });
});

describe("child runs: first N, timeouts, failures and cancellation", { timeout: 30_000 }, () => {
  it("answers the first child to settle, and cancels the children still running when the parent settles", async () => {
    const { prefix, parent, children } = world(3);
    const runId = await fan(parent, {
      shards: 3,
      prefix,
      definitions: ["hang@v1", "work@v1", "hang@v1"],
      count: 1,
    });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    const outcomes = run.result as TaskChildOutcome[];
    expect(outcomes.map((o) => o.state)).toEqual(["running", "completed", "running"]);
    expect(outcomes[1]).toMatchObject({ result: { i: 1, doubled: 2 } });
    expect((await childRun(children[0] as () => Shard, runId, 0))?.state).toBe("cancelled");
    expect((await childRun(children[1] as () => Shard, runId, 1))?.state).toBe("completed");
    expect((await childRun(children[2] as () => Shard, runId, 2))?.state).toBe("cancelled");
  });

  it("answers what settled when the timeout passes, and cancels the children still running", async () => {
    const { prefix, parent, children } = world(2);
    const runId = await fan(parent, { shards: 2, prefix, definition: "hang@v1", timeoutMs: 300 });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    const outcomes = run.result as TaskChildOutcome[];
    expect(outcomes.map((o) => o.state)).toEqual(["running", "running"]);
    for (let i = 0; i < 2; i++) {
      expect((await childRun(children[i] as () => Shard, runId, i))?.state).toBe("cancelled");
    }
  });

  it("cancels a child whose start was answered after its parent was cancelled: no child outlives its parent", async () => {
    const { prefix, parent, children } = world(2);
    // Shard 1 accepts its child, then cancels the parent before it answers the start.
    await (children[1] as () => Shard)().arm("cancel-parent-after-start");
    const runId = await fan(parent, { shards: 2, prefix, definition: "hang@v1" });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("cancelled");
    for (let i = 0; i < 2; i++) {
      expect((await childRun(children[i] as () => Shard, runId, i))?.state).toBe("cancelled");
    }
  });

  it("reports a child that failed for good with its coded error", async () => {
    const { prefix, parent, children } = world(1);
    const runId = await fan(parent, { shards: 1, prefix, definition: "fail@v1" });
    const run = await settle(parent, runId, children);
    const [outcome] = run.result as TaskChildOutcome[];
    expect(outcome).toMatchObject({
      state: "failed",
      error: {
        name: "NonRetryableError",
        code: "tasks/non-retryable",
        message: "the shard says no",
      },
    });
  });

  it("cancels the children of a cancelled parent, and a child whose parent is gone drops its notification", async () => {
    const { prefix, parent, children } = world(2);
    const runId = await fan(parent, { shards: 2, prefix, definition: "hang@v1" });
    // Both children started and the parent waits for them.
    await awaitingChildren(parent, runId);
    expect(await parent().cancel(runId)).toBe(true);
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("cancelled");
    for (let i = 0; i < 2; i++) {
      expect((await childRun(children[i] as () => Shard, runId, i))?.state).toBe("cancelled");
    }
    expect(await parent().counts()).toEqual({});
  });
});

describe("child runs take part in compensation", { timeout: 30_000 }, () => {
  it("cancelling a parent compensates its children: each child undoes its completed steps, once", async () => {
    const { prefix, parent, children } = world(2);
    const runId = await fan(parent, { shards: 2, prefix, definition: "reserve-hang@v1" });
    await awaitingChildren(parent, runId);
    expect(await parent().cancel(runId)).toBe(true);
    expect((await settle(parent, runId, children)).state).toBe("cancelled");
    for (let i = 0; i < 2; i++) {
      const shard = children[i] as () => Shard;
      for (let n = 0; n < 200; n++) {
        if ((await childRun(shard, runId, i))?.state === "cancelled") break;
        await sleep(20);
      }
      expect((await childRun(shard, runId, i))?.state).toBe("cancelled");
      expect(await shard().counts()).toEqual({ reserve: 1, unreserve: 1 });
    }
  });
});

/** Waits until the parent run parks in its wait for its children. */
async function awaitingChildren(parent: () => Parent, runId: string) {
  for (let i = 0; ; i++) {
    const run = (await parent().get(runId)) as Snapshot | null;
    if (run?.state === "waiting" && run.eventType === "__dk:children") return;
    if (i > 200) throw new Error(`the parent did not reach its wait: ${JSON.stringify(run)}`);
    await sleep(20);
  }
}

/**
 * Starts a child run of `work@v1` in a fresh shard whose parent is an object without
 * `receiveTasks`: the child runs, and every delivery of its settlement fails.
 */
async function startUnreachable(prefix: string, i: number) {
  const name = `${prefix}-${crypto.randomUUID()}`;
  const child = (): Shard => env.SHARD.getByName(name);
  const nowhere = env.FIXTURE.idFromName(`nowhere-${crypto.randomUUID()}`).toString();
  const reply = (await child().receiveTasks({
    v: 2,
    kind: "start",
    key: token(),
    secret: token(),
    definition: "work@v1",
    input: encode({ i }),
    parent: { binding: "FIXTURE", id: nowhere },
    parentRunId: "p1",
    step: "s",
    index: 0,
  })) as { ok: boolean; runId: string };
  expect(reply.ok).toBe(true);
  return { child, nowhere, reply };
}

describe("child runs: a parent that cannot be reached", { timeout: 30_000 }, () => {
  it("retries a settlement with back-off while the parent cannot take it, and drops it after deliveryTimeoutMs", async () => {
    const { child, nowhere, reply } = await startUnreachable("lonely", 3);
    const stateOf = async () =>
      ((await retry(child, (c) => c.get(reply.runId))) as Snapshot | null)?.state;
    for (let i = 0; (await stateOf()) !== "completed"; i++) {
      if (i > 200) {
        throw new Error(
          `the child run did not complete: ${JSON.stringify(await child().get(reply.runId))}`,
        );
      }
      await sleep(20);
    }
    let tried: number[] = [];
    const started = Date.now();
    for (;;) {
      await runDurableObjectAlarm(child()).catch(() => false);
      const owed = await retry(child, (c) => c.outboxAttempts());
      if (owed.length === 0) break;
      tried = owed;
      if (Date.now() - started > 15_000) throw new Error("the message was never dropped");
      await sleep(100);
    }
    // Tried more than once (1 s, then 2 s of back-off), and gone after the 2.5 s deliveryTimeoutMs.
    expect(Math.max(...tried)).toBeGreaterThanOrEqual(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_500);
    expect(await stateOf()).toBe("completed");
    // Reported as an event, not only logged.
    const dropped = await retry(child, (c) => c.eventsOf("task:child:dropped"));
    expect(dropped).toEqual([
      expect.objectContaining({ message: "settled", target: { binding: "FIXTURE", id: nowhere } }),
    ]);
  });
});

describe("child runs: a delivery cut by a restart", { timeout: 30_000 }, () => {
  it("is tried again on the new instance's first wake, not when the gone instance's lease ends", async () => {
    // A child whose parent cannot take its settlement: the message stays owed.
    const { child } = await startUnreachable("leased", 4);
    for (let i = 0; (await retry(child, (c) => c.outboxAttempts())).length === 0; i++) {
      if (i > 200) throw new Error("the settlement was never owed");
      await sleep(10);
    }
    // The instance leases the delivery for a minute (as after several failed tries) and dies
    // with it in flight.
    await runInDurableObject(child(), (_instance, state) => {
      state.storage.sql.exec("UPDATE dk_tasks_outbox SET next_at = ?", Date.now() + 60_000);
    });
    const before = (await retry(child, (c) => c.outboxAttempts()))[0] as number;
    await abortAllDurableObjects();
    const restarted = Date.now();
    // One request reaches the new instance; its alarm then tries the delivery (or drops it, past
    // deliveryTimeoutMs): either way, within about a second.
    for (;;) {
      const owed = await retry(child, (c) => c.outboxAttempts());
      if (owed.length === 0 || (owed[0] as number) > before) break;
      if (Date.now() - restarted > 2_000) {
        throw new Error(`the leased delivery waited for its lease: ${JSON.stringify(owed)}`);
      }
      await sleep(50);
    }
    expect(Date.now() - restarted).toBeLessThan(2_000);
  });
});

describe("child runs: bad input", () => {
  const INVALID = "tasks/invalid-argument";
  const cases: Array<[string, Record<string, unknown>]> = [
    ["no runs", { code: INVALID }],
    ["too many runs", { code: INVALID }],
    ["not a run", { code: INVALID }],
    ["a run twice", { code: INVALID, message: expect.stringContaining("twice") }],
    [
      "a run it did not start",
      { code: INVALID, message: expect.stringContaining("not a child run") },
    ],
    ["count 0", { code: INVALID }],
    ["count over the runs", { code: INVALID }],
    ["bad timeoutMs", { code: INVALID }],
    ["unknown binding", { code: INVALID }],
    ["not a namespace", { code: INVALID }],
    ["no name", { code: INVALID }],
    ["no children", { code: INVALID, message: expect.stringContaining("1 to 1000") }],
    ["too many children", { code: INVALID, message: expect.stringContaining("1 to 1000") }],
    ["a child that is not a spec", { code: INVALID }],
    ["a child with a bad target", { code: INVALID, message: expect.stringContaining("NOPE") }],
    ["not an id", { code: INVALID, message: expect.stringContaining("not an id of namespace") }],
    [
      "an id of another namespace",
      { code: INVALID, message: expect.stringContaining("not an id of namespace") },
    ],
    [
      "unknown definition",
      { code: "tasks/non-retryable", message: expect.stringContaining("tasks/unknown-definition") },
    ],
  ];
  for (const [name, expected] of cases) {
    it(`refuses a step call with ${name}, coded, at the call`, async () => {
      const { parent } = world(0);
      const { runId } = await parent().start("misuse@v1", { case: name });
      const run = await settle(parent, runId, []);
      expect(run).toMatchObject({ state: "completed", result: expected });
    });
  }

  it("answers a malformed or foreign message refused, coded, and changes nothing", async () => {
    const { parent } = world(0);
    const replies = await runInDurableObject(parent(), async (instance: ParentObject) => {
      const { runId } = await instance.tasks.run("misuse@v1", { case: "no runs" } as never);
      const exchange = { key: token(), secret: token() };
      const messages: unknown[] = [
        null,
        "start",
        [],
        { kind: "start" },
        { v: 0, kind: "start" },
        { v: 1, kind: "start", key: "k" },
        { v: 3, kind: "settled", key: "k" },
        { v: 2, kind: "nope", ...exchange },
        { v: 2, kind: "start", key: "not hex", secret: exchange.secret },
        {
          v: 2,
          kind: "start",
          ...exchange,
          definition: "fan@v1",
          input: 5,
          parent: {},
          parentRunId: "p",
          step: "s",
        },
        {
          v: 2,
          kind: "start",
          ...exchange,
          definition: "fan@v1",
          input: "1",
          parent: { binding: "PARENT", id: "not-an-id" },
          parentRunId: "p",
          step: "s",
        },
        {
          v: 2,
          kind: "settled",
          ...exchange,
          parentRunId: "p",
          step: "s",
          childRunId: "c",
          state: "done",
        },
        {
          v: 2,
          kind: "settled",
          ...exchange,
          parentRunId: "p",
          step: "s",
          childRunId: "c",
          state: "completed",
          result: null,
          error: "{}",
        },
        { v: 2, kind: "batch", messages: [] },
        // At most 256 messages in a batch.
        {
          v: 2,
          kind: "batch",
          messages: Array.from({ length: 257 }, () => ({ v: 2, kind: "cancel", ...exchange })),
        },
        { v: 2, kind: "batch", messages: [{ v: 2, kind: "cancel", key: 1 }] },
      ];
      const out = [];
      for (const message of messages) out.push(await instance.tasks.receive(message));
      return {
        out,
        run: await instance.tasks.get(runId),
        refused: instance.eventsOf("task:child:refused").length,
      };
    });
    expect(replies.out.map((r) => (r as { code?: string }).code)).toEqual([
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/schema-too-new",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
      "tasks/invalid-argument",
    ]);
    // A message without a version says so; it is not taken for a newer one.
    expect((replies.out[3] as { message: string }).message).toContain("carries no version");
    expect((replies.out[4] as { message: string }).message).toContain("carries no version");
    // Each refusal is reported as an event.
    expect(replies.refused).toBe(replies.out.length);
    for (const reply of replies.out) expect(reply).toMatchObject({ ok: false });
    expect(replies.run?.state).not.toBe("cancelled");
  });

  it("refuses event types with the engine's reserved prefix", async () => {
    const { parent } = world(0);
    const code = await runInDurableObject(parent(), async (instance: ParentObject) => {
      const { runId } = await instance.tasks.run("misuse@v1", { case: "no runs" } as never);
      return instance.tasks.sendEvent(runId, "__dk:children", [0]).then(
        () => null,
        (error: { code?: string }) => error.code,
      );
    });
    expect(code).toBe("tasks/invalid-argument");
  });
});
