import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { encode } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import type { TaskChildOutcome } from "../src/index";
import {
  childRun,
  fan,
  type Parent,
  retry,
  type Shard,
  type Snapshot,
  settle,
  token,
  world,
} from "./child-helpers";
import type { ShardObject } from "./fixtures/child-objects";
import { sleep } from "./helpers";

/** Polls `read` until `done` holds of what it answers (real time passes: claims, back-offs). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string) {
  for (let i = 0; ; i++) {
    const value = await read();
    if (done(value)) return value;
    if (i > 300) throw new Error(`${what}: ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

/** A parent whose fan-out to `shards` hanging children is parked on their await. */
async function waitingFan(shards: number) {
  const w = world(shards);
  const runId = await fan(w.parent, { shards, prefix: w.prefix, definition: "hang@v1" });
  await until(
    () => retry(w.parent, (p) => p.get(runId)),
    (run) => (run as Snapshot | null)?.eventType === "__dk:children",
    "the parent did not reach its wait",
  );
  return { ...w, runId };
}

/** A start message of a fresh exchange, as a parent at `parentId` would send it. */
function startOf(parentId: string, definition: string, input: unknown, parentRunId = "p1") {
  return {
    v: 2,
    kind: "start",
    key: token(),
    secret: token(),
    parent: { binding: "PARENT", id: parentId },
    parentRunId,
    step: "s",
    index: 0,
    definition,
    input: encode(input),
  };
}

const states = async (parent: () => Parent, runId: string) =>
  ((await retry(parent, (p) => p.childrenOf(runId))) ?? []).map((c) => c.state);

describe("child runs: one child per parent step, across objects and over time", {
  timeout: 30_000,
}, () => {
  it("gives two tenants' runs that share a run id each their own child in a shared object", async () => {
    const prefix = `s-${crypto.randomUUID()}`;
    const children = [(): Shard => env.SHARD.getByName(`${prefix}-0`)];
    const nameA = `a-${crypto.randomUUID()}`;
    const nameB = `b-${crypto.randomUUID()}`;
    const a = (): Parent => env.PARENT.getByName(nameA);
    const b = (): Parent => env.PARENT.getByName(nameB);
    await retry(a, (p) => p.start("fan@v1", { shards: 1, prefix, tag: "a" }, "nightly"));
    await retry(b, (p) => p.start("fan@v1", { shards: 1, prefix, tag: "b" }, "nightly"));
    const runA = await settle(a, "nightly", children);
    const runB = await settle(b, "nightly", children);
    const [outA] = runA.result as TaskChildOutcome[];
    const [outB] = runB.result as TaskChildOutcome[];
    expect(outA).toMatchObject({ state: "completed", result: { i: 0, doubled: 0, tag: "a" } });
    expect(outB).toMatchObject({ state: "completed", result: { i: 0, doubled: 0, tag: "b" } });
    expect(outA?.runId).not.toBe(outB?.runId);
    const shard = children[0] as () => Shard;
    const idA = await a().objectId();
    const idB = await b().objectId();
    expect(await shard().childRunsOf("nightly", "start 0", idA)).toEqual([outA?.runId]);
    expect(await shard().childRunsOf("nightly", "start 0", idB)).toEqual([outB?.runId]);
  });

  it("gives a run that reuses a deleted run's id a new child, not the deleted run's settled one", async () => {
    const { prefix, parent, children } = world(1);
    await retry(parent, (p) => p.start("fan@v1", { shards: 1, prefix, tag: "first" }, "again"));
    await settle(parent, "again", children);
    expect(await parent().deleteSettled()).toBe(1);
    await retry(parent, (p) => p.start("fan@v1", { shards: 1, prefix, tag: "second" }, "again"));
    const run = await settle(parent, "again", children);
    const [outcome] = run.result as TaskChildOutcome[];
    expect(outcome).toMatchObject({ state: "completed", result: { tag: "second" } });
    const shard = children[0] as () => Shard;
    expect(await shard().childRunsOf("again", "start 0")).toHaveLength(2);
  });

  it("answers a start retried after retention deleted its settled child with the same child, running nothing again", async () => {
    const shardName = `retained-${crypto.randomUUID()}`;
    const shard = (): Shard => env.SHARD.getByName(shardName);
    const sink = env.PARENT.idFromName(`sink-${crypto.randomUUID()}`).toString();
    const start = startOf(sink, "work@v1", { i: 4 });
    const first = (await shard().deliver(start)) as { ok: boolean; runId: string };
    expect(first).toMatchObject({ ok: true });
    await until(
      () => shard().get(first.runId),
      (run) => (run as Snapshot | null)?.state === "completed",
      "the child did not complete",
    );
    expect(await shard().deleteSettled()).toBe(1);
    expect(await shard().get(first.runId)).toBeNull();
    // The parent lost the answer and retries the start: it joins the deleted child.
    const again = (await shard().deliver(start)) as { ok: boolean; runId: string };
    expect(again).toEqual({ v: 2, ok: true, runId: first.runId });
    expect((await shard().counts())[`work:${first.runId}`]).toBe(1);
    expect(await shard().rowsOf("SELECT run_id FROM dk_tasks_runs")).toEqual([]);
  });

  it("keeps a settled child's side of the exchange for deliveryTimeoutMs, then lets it go", async () => {
    const shardName = `expiring-${crypto.randomUUID()}`;
    const shard = (): Shard => env.SHARD.getByName(shardName);
    const sink = env.PARENT.idFromName(`sink-${crypto.randomUUID()}`).toString();
    const start = startOf(sink, "work@v1", { i: 1 });
    const { runId } = (await shard().deliver(start)) as { runId: string };
    await until(
      () => shard().get(runId),
      (run) => (run as Snapshot | null)?.state === "completed",
      "the child did not complete",
    );
    const links = () => shard().rowsOf("SELECT expires_at FROM dk_tasks_links");
    const [link] = await links();
    // The shard's deliveryTimeoutMs is 2.5 s.
    expect(Number(link?.expires_at) - Date.now()).toBeGreaterThan(1_500);
    expect(Number(link?.expires_at) - Date.now()).toBeLessThanOrEqual(2_500);
    await sleep(2_600);
    await runDurableObjectAlarm(shard());
    expect(await links()).toEqual([]);
  });
});

describe("child runs: only the two objects of an exchange can speak for it", {
  timeout: 30_000,
}, () => {
  it("refuses a settlement with a wrong secret, under another step's key or naming another child run; none changes the parent", async () => {
    const { parent, runId } = await waitingFan(2);
    const own = await parent().exchangeOf(runId, "start 0");
    const other = await parent().exchangeOf(runId, "start 1");
    const settled = (fields: Record<string, unknown>) => ({
      v: 2,
      kind: "settled",
      key: own.key,
      secret: own.secret,
      parentRunId: runId,
      step: "start 0",
      index: 0,
      childRunId: own.child,
      state: "completed",
      result: encode("forged"),
      error: null,
      ...fields,
    });
    const forged = [
      settled({ secret: token() }),
      settled({ key: other.key, secret: other.secret }),
      settled({ childRunId: other.child }),
    ];
    for (const message of forged) {
      expect(await parent().deliver(message)).toMatchObject({ ok: false, code: "tasks/forbidden" });
    }
    expect(await states(parent, runId)).toEqual(["running", "running"]);
    expect(((await parent().get(runId)) as Snapshot | null)?.state).toBe("waiting");
    const refused = await parent().eventsOf("task:child:refused");
    expect(refused.map((e) => (e as { code: string }).code)).toEqual([
      "tasks/forbidden",
      "tasks/forbidden",
      "tasks/forbidden",
    ]);
  });

  it("inserts no phantom child: a settlement for a step the run never started changes nothing", async () => {
    const { parent, runId } = await waitingFan(1);
    const reply = await parent().deliver({
      v: 2,
      kind: "settled",
      key: token(),
      secret: token(),
      parentRunId: runId,
      step: "start 9",
      index: 0,
      childRunId: "task_phantom",
      state: "completed",
      result: encode(1),
      error: null,
    });
    expect(reply).toEqual({ v: 2, ok: true, gone: true });
    expect(await states(parent, runId)).toEqual(["running"]);
  });

  it("refuses a cancel with a wrong secret: the child keeps running", async () => {
    const { parent, children, runId } = await waitingFan(1);
    const own = await parent().exchangeOf(runId, "start 0");
    const shard = children[0] as () => Shard;
    const reply = await shard().deliver({
      v: 2,
      kind: "cancel",
      key: own.key,
      secret: token(),
      reason: "not yours",
    });
    expect(reply).toMatchObject({ ok: false, code: "tasks/forbidden" });
    expect((await childRun(shard, runId, 0))?.state).toBe("waiting");
  });

  it("never cancels or joins an ordinary run whose idempotency key looks like an exchange key", async () => {
    const shardName = `keys-${crypto.randomUUID()}`;
    const shard = (): Shard => env.SHARD.getByName(shardName);
    const key = token();
    const own = await retry(shard, (s) => s.start("work@v1", { i: 7 }, undefined));
    const users = await runInShard(shard, key);
    expect(users).not.toBe(own.runId);
    // A cancel naming the key as an exchange cancels nothing of the user's run.
    expect(
      await shard().deliver({ v: 2, kind: "cancel", key, secret: token(), reason: "x" }),
    ).toMatchObject({ ok: true });
    expect(((await shard().get(users)) as Snapshot | null)?.state).toBe("waiting");
    // A start naming another user key as its exchange starts a new run; it does not join theirs.
    const otherKey = token();
    const theirs = await runInShard(shard, otherKey);
    const sink = env.PARENT.idFromName(`sink-${crypto.randomUUID()}`).toString();
    const started = (await shard().deliver({
      ...startOf(sink, "hang@v1", null),
      key: otherKey,
    })) as {
      runId: string;
    };
    expect(started.runId).not.toBe(theirs);
    expect(((await shard().get(theirs)) as Snapshot | null)?.state).toBe("waiting");
  });

  it("refuses a start that reuses an exchange for another parent run, or without its secret", async () => {
    const shardName = `reuse-${crypto.randomUUID()}`;
    const shard = (): Shard => env.SHARD.getByName(shardName);
    const sink = env.PARENT.idFromName(`sink-${crypto.randomUUID()}`).toString();
    const start = startOf(sink, "hang@v1", null, "p1");
    const { runId } = (await shard().deliver(start)) as { runId: string };
    expect(await shard().deliver({ ...start, parentRunId: "p2" })).toMatchObject({
      ok: false,
      code: "tasks/conflict",
    });
    expect(await shard().deliver({ ...start, secret: token() })).toMatchObject({
      ok: false,
      code: "tasks/forbidden",
    });
    expect(await shard().deliver(start)).toEqual({ v: 2, ok: true, runId });
    expect(await shard().rowsOf("SELECT run_id FROM dk_tasks_runs")).toHaveLength(1);
  });
});

/** Starts an ordinary `hang@v1` run with idempotency key `key` in the shard; answers its id. */
async function runInShard(shard: () => Shard, key: string): Promise<string> {
  return runInDurableObject(shard(), async (instance: ShardObject) => {
    const receipt = await instance.tasks.run("hang@v1", null as never, { idempotencyKey: key });
    return receipt.runId;
  });
}

describe("child runs: no orphans, no give-ups a deploy would fix", { timeout: 30_000 }, () => {
  it("cancels a child whose start's answer was lost when the parent settles before retrying it", async () => {
    const { prefix, parent, children } = world(1);
    const shard = children[0] as () => Shard;
    // The shard accepts the start, then restarts the parent before it answers.
    await shard().arm("after-start");
    const runId = await fan(parent, { shards: 1, prefix, definition: "hang@v1" });
    await until(
      () => retry(shard, (s) => s.childRunsOf(runId, "start 0")),
      (runs) => runs.length === 1,
      "the shard did not accept the start",
    );
    // The parent never heard the answer: it knows only its intent.
    expect(await states(parent, runId)).toEqual(["starting"]);
    expect(await retry(parent, (p) => p.cancel(runId))).toBe(true);
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("cancelled");
    expect((await childRun(shard, runId, 0))?.state).toBe("cancelled");
    expect(await states(parent, runId)).toEqual(["cancelled"]);
  });

  it("retries a start refused as schema-too-new (a deploy half done) and completes", async () => {
    const { prefix, parent, children } = world(1);
    await (children[0] as () => Shard)().arm("too-new");
    const runId = await fan(parent, { shards: 1, prefix });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    expect((run.result as TaskChildOutcome[])[0]).toMatchObject({ state: "completed" });
  });

  it("lists children in start order, those its settlement cancelled as cancelled", async () => {
    const { prefix, parent, children } = world(11);
    const definitions = Array.from({ length: 11 }, (_, i) => (i === 10 ? "work@v1" : "hang@v1"));
    const runId = await fan(parent, { shards: 11, prefix, definitions, count: 1 });
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    const known = (await parent().childrenOf(runId)) ?? [];
    expect(known.map((c) => c.step)).toEqual(Array.from({ length: 11 }, (_, i) => `start ${i}`));
    expect(known.map((c) => c.state)).toEqual([...Array(10).fill("cancelled"), "completed"]);
  });
});

describe("child runs: content and size", { timeout: 30_000 }, () => {
  it("refuses a start whose input is not codec text or is over maxValueBytes, storing nothing, and accepts the same exchange sent well-formed", async () => {
    const shardName = `input-${crypto.randomUUID()}`;
    const shard = (): Shard => env.SHARD.getByName(shardName);
    const sink = env.PARENT.idFromName(`sink-${crypto.randomUUID()}`).toString();
    const start = startOf(sink, "work@v1", { i: 3 });
    for (const [input, code] of [
      ["{not codec", "tasks/invalid-argument"],
      ['{"$nope":1}', "tasks/invalid-argument"],
      [encode("x".repeat(1024 * 1024 + 1)), "tasks/too-large"],
    ] as const) {
      expect(await shard().deliver({ ...start, input })).toMatchObject({ ok: false, code });
    }
    expect(await shard().rowsOf("SELECT run_id FROM dk_tasks_runs")).toEqual([]);
    expect(await shard().rowsOf("SELECT key FROM dk_tasks_links")).toEqual([]);
    const accepted = (await shard().deliver(start)) as { ok: boolean; runId: string };
    expect(accepted).toMatchObject({ ok: true });
    await until(
      () => shard().get(accepted.runId),
      (run) => (run as Snapshot | null)?.state === "completed",
      "the child did not complete",
    );
    expect((await shard().get(accepted.runId)) as Snapshot | null).toMatchObject({
      result: { i: 3, doubled: 6 },
    });
  });

  it("refuses a settlement whose result or error cannot be read, and applies the real one after", async () => {
    const { parent, children, runId } = await waitingFan(1);
    const own = await parent().exchangeOf(runId, "start 0");
    const settled = (state: string, result: string | null, error: string | null) => ({
      v: 2,
      kind: "settled",
      key: own.key,
      secret: own.secret,
      parentRunId: runId,
      step: "start 0",
      index: 0,
      childRunId: own.child,
      state,
      result,
      error,
    });
    for (const bad of [
      settled("completed", "{not codec", null),
      settled("completed", '{"$nope":1}', null),
      settled("failed", null, "{}"),
      settled("failed", null, "not json"),
      settled("cancelled", null, '{"$error":{"name":1}}'),
    ]) {
      expect(await parent().deliver(bad)).toMatchObject({
        ok: false,
        code: "tasks/invalid-argument",
      });
    }
    expect(await states(parent, runId)).toEqual(["running"]);
    // The real settlement (the child cancelled) still applies.
    const shard = children[0] as () => Shard;
    expect(await shard().cancel(own.child as string)).toBe(true);
    await until(
      async () => {
        await runDurableObjectAlarm(shard()).catch(() => false);
        return states(parent, runId);
      },
      (list) => list[0] === "cancelled",
      "the real settlement was not applied",
    );
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    expect((run.result as TaskChildOutcome[])[0]).toMatchObject({
      state: "cancelled",
      error: { code: "tasks/cancelled" },
    });
  });

  it("stores a settlement of maxValueBytes of quotes in one outbox row under 2 MB", async () => {
    const shardName = `big-${crypto.randomUUID()}`;
    const shard = (): Shard => env.SHARD.getByName(shardName);
    // An object that never acknowledges: the settlement stays in the outbox.
    const nowhere = env.FIXTURE.idFromName(`nowhere-${crypto.randomUUID()}`).toString();
    const n = 524_282;
    // Each quote is escaped once by the codec: the result is maxValueBytes (1 MiB) encoded, less one byte.
    expect(encode('"'.repeat(n)).length).toBe(1_048_575);
    const { runId } = (await shard().deliver({
      ...startOf(nowhere, "quotes@v1", { n }),
      parent: { binding: "FIXTURE", id: nowhere },
    })) as { runId: string };
    await until(
      () => shard().get(runId),
      (run) => (run as Snapshot | null)?.state === "completed",
      "the child did not complete",
    );
    const [row] = await shard().rowsOf(
      `SELECT length(CAST(id AS BLOB)) + length(CAST(target AS BLOB)) + length(CAST(envelope AS BLOB))
         + length(CAST(payload AS BLOB)) + 24 AS bytes FROM dk_tasks_outbox`,
    );
    // Production's row limit is 2 MB (local workerd refuses only rows near 9 MB).
    expect(Number(row?.bytes)).toBeLessThan(2_000_000);
    expect(Number(row?.bytes)).toBeGreaterThan(1_048_576);
  });

  it("writes a parked awaitChildren's wait rows only under the run's fence", async () => {
    const name = `fenced-${crypto.randomUUID()}`;
    const parent = (): Parent => env.PARENT.getByName(name);
    const shardName = `s-${crypto.randomUUID()}`;
    const { runId } = await retry(parent, (p) => p.start("superseded@v1", { shard: shardName }));
    await until(
      () => retry(parent, (p) => p.childrenOf(runId)),
      (list) => list?.[0]?.state === "running",
      "the child was not started",
    );
    await sleep(200);
    expect(
      await parent().rowsOf("SELECT run_id FROM dk_tasks_child_waits WHERE run_id = ?", runId),
    ).toEqual([]);
    expect(
      await parent().rowsOf(
        "SELECT wait_step FROM dk_tasks_children WHERE parent_run_id = ? AND wait_step IS NOT NULL",
        runId,
      ),
    ).toEqual([]);
  });
});

describe("child runs: a fan-in that batches, and events", { timeout: 30_000 }, () => {
  it("delivers the settlements one object owes one parent as one message", async () => {
    const shardName = `batch-${crypto.randomUUID()}`;
    const shard = (): Shard => env.SHARD.getByName(shardName);
    const sinkName = `sink-${crypto.randomUUID()}`;
    const sink = (): Parent => env.PARENT.getByName(sinkName);
    const sinkId = await sink().objectId();
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const reply = (await shard().deliver(startOf(sinkId, "hang@v1", null, `p${i}`))) as {
        runId: string;
      };
      runs.push(reply.runId);
    }
    // Settled in one turn: their three settlements are owed together.
    expect(await shard().cancelAll(runs)).toEqual([true, true, true]);
    await until(
      async () => {
        await runDurableObjectAlarm(shard()).catch(() => false);
        return shard().outbox();
      },
      (owed) => owed === 0,
      "the settlements were not delivered",
    );
    expect(await sink().receivedCalls()).toEqual([{ kind: "batch", messages: 3 }]);
    const delivered = await shard().eventsOf("task:child:delivered");
    expect(delivered).toHaveLength(3);
  });

  it("reports the protocol as task:child:* events on both sides", async () => {
    const { prefix, parent, children } = world(1);
    const runId = await fan(parent, { shards: 1, prefix });
    await settle(parent, runId, children);
    const [started] = await parent().eventsOf("task:child:started");
    const [settled] = await parent().eventsOf("task:child:settled");
    expect(started).toMatchObject({ runId, step: "start 0", target: { binding: "SHARD" } });
    expect(settled).toMatchObject({ runId, step: "start 0", state: "completed" });
    const [delivered] = await (children[0] as () => Shard)().eventsOf("task:child:delivered");
    expect(delivered).toMatchObject({ message: "settled", target: { binding: "PARENT" } });
  });
});

describe("child runs: many started in one step", { timeout: 30_000 }, () => {
  it("starts children in one step with one RPC per object, each once, and fans them in", async () => {
    const { prefix, parent } = world(0);
    const children = [0, 1].map((i) => (): Shard => env.SHARD.getByName(`${prefix}-${i}`));
    const runId = (
      await retry(parent, (p) => p.start("many@v1", { shards: 6, prefix, objects: 2 }))
    ).runId;
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    const outcomes = run.result as TaskChildOutcome[];
    expect(outcomes.map((o) => (o.state === "completed" ? o.result : o.state))).toEqual(
      Array.from({ length: 6 }, (_, i) => ({ i, doubled: i * 2 })),
    );
    for (const child of children) {
      // Three children in each object: their starts came as one batch.
      expect(await child().receivedCalls()).toContainEqual({ kind: "batch", messages: 3 });
      const counts = await child().counts();
      expect(Object.values(counts).filter((n) => n !== 1)).toEqual([]);
      expect(Object.keys(counts)).toHaveLength(3);
    }
    const known = (await parent().childrenOf(runId)) ?? [];
    expect(known.map((c) => [c.step, c.index, c.state])).toEqual(
      Array.from({ length: 6 }, (_, i) => ["start", i, "completed"]),
    );
  });

  it("restarts the parent after an object accepted its batch of starts: each child once", async () => {
    const { prefix, parent } = world(0);
    const children = [0, 1].map((i) => (): Shard => env.SHARD.getByName(`${prefix}-${i}`));
    await (children[0] as () => Shard)().arm("after-start");
    const runId = (
      await retry(parent, (p) => p.start("many@v1", { shards: 4, prefix, objects: 2 }))
    ).runId;
    const run = await settle(parent, runId, children);
    expect(run.state).toBe("completed");
    for (const child of children) {
      const counts = await retry(child, (c) => c.counts());
      expect(Object.values(counts)).toEqual([1, 1]);
    }
    expect(
      await parent().rowsOf(
        "SELECT count(*) AS n FROM dk_tasks_children WHERE parent_run_id = ?",
        runId,
      ),
    ).toEqual([{ n: 4 }]);
  });
});
