import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { TaskChildOutcome } from "../src/index";
import type { FanInput, ParentObject, ShardObject } from "./fixtures/child-objects";
import { sleep } from "./helpers";

/** A key or secret of the child-run protocol: 32 random hex digits. */
export function token(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

export type Parent = DurableObjectStub<ParentObject>;
export type Shard = DurableObjectStub<ShardObject>;

export const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** What the tests read of a run's snapshot. */
export type Snapshot = { state: string; result?: unknown; eventType?: string };

/**
 * A parent object and its shard objects, by name. A stub whose object restarted stays broken, so
 * every call takes a new stub.
 */
export function world(shards: number) {
  const prefix = `s-${crypto.randomUUID()}`;
  const parentName = `p-${crypto.randomUUID()}`;
  const parent = (): Parent => env.PARENT.getByName(parentName);
  const children = Array.from(
    { length: shards },
    (_, i) => (): Shard => env.SHARD.getByName(`${prefix}-${i}`),
  );
  return { prefix, parent, children };
}

/** Calls a fresh stub until it answers (an object a fault just restarted refuses the call in flight). */
export async function retry<S, T>(stub: () => S, fn: (s: S) => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn(stub());
    } catch (error) {
      if (i > 50) throw error;
      await sleep(20);
    }
  }
}

/**
 * Drives every object's alarm until the parent run settled and no object owes a message; answers
 * the parent's snapshot. Real time passes between rounds (claims of 300 ms, back-offs from 1 s).
 */
export async function settle(
  parent: () => Parent,
  runId: string,
  children: Array<() => Shard>,
): Promise<Snapshot> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const stub of [parent, ...children]) {
      await runDurableObjectAlarm(stub()).catch(() => false);
    }
    const run = await retry(parent, (p) => p.get(runId));
    let owed = await retry(parent, (p) => p.outbox());
    for (const child of children) owed += await retry(child, (c) => c.outbox());
    const seen = run as Snapshot | null;
    if (seen && TERMINAL.has(seen.state) && owed === 0) return seen;
    if (Date.now() > deadline) {
      throw new Error(`not settled: ${JSON.stringify(run)}, ${owed} messages owed`);
    }
    await sleep(50);
  }
}

/** The fan-out of `shards` children settled: each child ran its work once, one run per key, each settlement applied once. */
export async function expectOnce(
  parent: () => Parent,
  runId: string,
  children: Array<() => Shard>,
  outcomes: TaskChildOutcome[],
): Promise<void> {
  const applied = await retry(parent, (p) => p.counts());
  for (let i = 0; i < children.length; i++) {
    const child = children[i] as () => Shard;
    const runs = await retry(child, (c) => c.childRunsOf(runId, `start ${i}`));
    expect(runs, `one child run for start ${i}`).toHaveLength(1);
    const childRunId = runs[0] as string;
    expect(outcomes[i]).toEqual({
      runId: childRunId,
      state: "completed",
      result: { i, doubled: i * 2 },
    });
    const counts = await retry(child, (c) => c.counts());
    expect(counts[`work:${childRunId}`], `work of child ${i}`).toBe(1);
    expect(applied[`applied:${childRunId}`], `settlement of child ${i} applied`).toBe(1);
  }
}

export async function fan(parent: () => Parent, input: FanInput): Promise<string> {
  return (await retry(parent, (p) => p.start("fan@v1", input))).runId;
}

/** The child run `start <i>` of a parent run started in shard `i`. */
export async function childRun(child: () => Shard, runId: string, i: number) {
  const [childRunId] = await retry(child, (c) => c.childRunsOf(runId, `start ${i}`));
  return (await retry(child, (c) => c.get(childRunId as string))) as Snapshot | null;
}
