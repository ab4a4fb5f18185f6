import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isTasksError } from "../src/index";
import type { FlowObject } from "./fixtures/flow-objects";
import { sleep } from "./helpers";

const fresh = () => env.FLOW.getByName(`flow-${crypto.randomUUID()}`);
const inFlow = <T>(stub: DurableObjectStub<FlowObject>, fn: (host: FlowObject) => T | Promise<T>) =>
  runInDurableObject(stub, fn);

/** Sends "go" to every run of `definition` that waits for it; answers how many it sent. */
async function release(stub: DurableObjectStub<FlowObject>, definition: string): Promise<number> {
  return inFlow(stub, async (host) => {
    let sent = 0;
    for (const runId of host.runsIn(definition, "waiting")) {
      await host.tasks.sendEvent(runId, "go");
      sent += 1;
    }
    return sent;
  });
}

/** Fires the alarm until nothing of `definition` is left unsettled (bounded). */
async function drain(stub: DurableObjectStub<FlowObject>, definition: string): Promise<void> {
  for (let round = 0; round < 200; round++) {
    await release(stub, definition);
    await runDurableObjectAlarm(stub);
    const open = await inFlow(
      stub,
      (host) =>
        host.tasks.list({ definition, state: ["queued", "pending", "running", "waiting"] }).items
          .length,
    );
    if (open === 0) return;
    await sleep(10);
  }
  throw new Error(`runs of ${definition} did not settle`);
}

describe("concurrency", () => {
  it("keeps at most 2 of 10 runs started at once in progress; the rest wait queued, in start order", async () => {
    const stub = fresh();
    const ids = await inFlow(stub, async (host) => {
      const receipts = [];
      for (let i = 0; i < 10; i++) receipts.push(await host.tasks.run("limited", { id: `r${i}` }));
      return receipts;
    });
    expect(ids.map((receipt) => receipt.state)).toEqual([
      "running",
      "running",
      ...Array(8).fill("queued"),
    ]);
    await inFlow(stub, (host) => {
      const snapshot = host.tasks.get(ids[5]?.runId as string);
      expect(snapshot).toMatchObject({
        state: "queued",
        reason: "concurrency",
        key: "",
        priority: 0,
        wakeAt: null,
      });
      expect(host.tasks.list({ state: "queued" }).items).toHaveLength(8);
      // A queued run owes no wake: only the two in progress do.
      expect(
        host.rows(
          "SELECT run_id FROM dk_tasks_runs WHERE next_at IS NOT NULL AND state = 'queued'",
        ),
      ).toEqual([]);
    });
    await drain(stub, "limited");
    await inFlow(stub, (host) => {
      expect(host.peak("limited")).toBe(2);
      expect(host.runsIn("limited", "completed")).toHaveLength(10);
      // Started in the order they were started in.
      const starts = host.notes().filter((note) => note.startsWith("start:"));
      expect(starts).toEqual(Array.from({ length: 10 }, (_, i) => `start:r${i}`));
      expect(host.rows("SELECT * FROM dk_tasks_flows")).toEqual([]);
    });
  });

  it("lets a priority 10 run overtake the queued priority 0 runs; equal priorities keep start order", async () => {
    const stub = fresh();
    await inFlow(stub, async (host) => {
      for (let i = 0; i < 4; i++) await host.tasks.run("limited", { id: `low${i}` });
      await host.tasks.run("limited", { id: "high" }, { priority: 10 });
      await host.tasks.run("limited", { id: "mid" }, { priority: 5 });
    });
    await drain(stub, "limited");
    await inFlow(stub, (host) => {
      const starts = host.notes().filter((note) => note.startsWith("start:"));
      expect(starts).toEqual([
        "start:low0",
        "start:low1",
        "start:high",
        "start:mid",
        "start:low2",
        "start:low3",
      ]);
      expect(host.peak("limited")).toBe(2);
    });
  });

  it("counts slots per key: one run per user in progress, users side by side", async () => {
    const stub = fresh();
    await inFlow(stub, async (host) => {
      for (const user of ["ann", "bob", "ann", "bob", "cyd"]) {
        await host.tasks.run("perUser", { id: `${user}-${host.notes().length}`, user });
      }
      expect(host.runsIn("perUser", "queued")).toHaveLength(2);
      const queued = host.tasks.list({ state: "queued" }).items;
      expect(queued.map((run) => (run.state === "queued" ? run.key : null)).sort()).toEqual([
        "ann",
        "bob",
      ]);
    });
    await drain(stub, "perUser");
    await inFlow(stub, (host) => expect(host.runsIn("perUser", "completed")).toHaveLength(5));
  });

  it("keeps the newest waiting run of a busy key with keep-latest, and refuses with refuse", async () => {
    const stub = fresh();
    await inFlow(stub, async (host) => {
      const first = await host.tasks.run("latest", { id: "a", user: "u" });
      const second = await host.tasks.run("latest", { id: "b", user: "u" });
      const third = await host.tasks.run("latest", { id: "c", user: "u" });
      expect(first.state).toBe("running");
      expect(host.tasks.get(second.runId)).toMatchObject({
        state: "cancelled",
        reason: "replaced by a newer run of its key (keep-latest)",
      });
      expect(host.tasks.get(third.runId)?.state).toBe("queued");
      await host.tasks.run("refusing", { id: "x" });
      const before = host.tasks.list({ definition: "refusing" }).items.length;
      const refused = await host.tasks.run("refusing", { id: "y" }).catch((error) => error);
      expect(isTasksError(refused, "tasks/busy")).toBe(true);
      expect(refused.retryable).toBe(true);
      expect(host.tasks.list({ definition: "refusing" }).items).toHaveLength(before);
    });
  });

  it("frees a dead run's slot once: 2 of 10 in progress across an abort and an expired claim", async () => {
    let stub = fresh();
    await inFlow(stub, async (host) => {
      host.hangFirst = true;
      for (let i = 0; i < 10; i++) await host.tasks.run("limited", { id: `r${i}` });
    });
    // Both runs in progress hang in their first "work" step; the object dies under them.
    let hung = 0;
    for (let i = 0; i < 50 && hung < 2; i++) {
      await sleep(10);
      hung = await inFlow(stub, (host) => host.notes().filter((n) => n.startsWith("work:")).length);
    }
    expect(hung).toBe(2);
    await abortAllDurableObjects();
    stub = env.FLOW.get(stub.id);
    await sleep(350);
    await runDurableObjectAlarm(stub);
    await inFlow(stub, (host) => {
      // Reclaimed, still holding their two slots; nobody else started.
      expect(host.runsIn("limited", "queued")).toHaveLength(8);
      expect(host.peak("limited")).toBe(2);
    });
    await drain(stub, "limited");
    await inFlow(stub, (host) => {
      expect(host.peak("limited")).toBe(2);
      expect(host.runsIn("limited", "completed")).toHaveLength(10);
      const starts = host.notes().filter((note) => note.startsWith("start:"));
      expect(new Set(starts).size).toBe(10);
    });
  });
});
