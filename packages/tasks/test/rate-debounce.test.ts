import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isTasksError } from "../src/index";
import type { FlowObject } from "./fixtures/flow-objects";

const T0 = Date.UTC(2030, 0, 1);
const fresh = () => env.FLOW.getByName(`flow-${crypto.randomUUID()}`);
const inFlow = <T>(stub: DurableObjectStub<FlowObject>, fn: (host: FlowObject) => T | Promise<T>) =>
  runInDurableObject(stub, fn);
const starts = (host: FlowObject) => host.notes().filter((note) => note.startsWith("start:"));

/** Sets the test clock to `at` and fires the object's alarm. */
async function alarmAt(stub: DurableObjectStub<FlowObject>, at: number): Promise<void> {
  await inFlow(stub, (host) => host.setClock(at));
  await runDurableObjectAlarm(stub);
  // Let the attempts the alarm started run their steps.
  await inFlow(stub, () => new Promise((resolve) => setTimeout(resolve, 20)));
}

describe("rate limits", () => {
  it("starts at most 3 runs per 1,000 ms window; the rest start when the window has room", async () => {
    const stub = fresh();
    await inFlow(stub, async (host) => {
      host.setClock(T0);
      for (let i = 0; i < 5; i++) await host.tasks.run("rated", { id: `r${i}` });
      expect(host.runsIn("rated", "queued")).toHaveLength(2);
      const queued = host.tasks.get(host.runsIn("rated", "queued")[0] as string);
      expect(queued).toMatchObject({ state: "queued", reason: "rate", wakeAt: null });
      // The key's one wake is when the oldest start leaves the window.
      expect(host.tasks.nextWakeAt()).toBeLessThanOrEqual(T0 + 1_000);
      host.setClock(T0 + 400);
      await host.tasks.run("rated", { id: "r5" });
    });
    await alarmAt(stub, T0 + 999);
    await inFlow(stub, (host) => expect(host.runsIn("rated", "queued")).toHaveLength(3));
    await alarmAt(stub, T0 + 1_000);
    await inFlow(stub, (host) => {
      // The three starts at T0 left the window: three more start, in start order.
      expect(host.runsIn("rated", "queued")).toHaveLength(0);
      expect(starts(host)).toEqual([
        "start:r0",
        "start:r1",
        "start:r2",
        "start:r3",
        "start:r4",
        "start:r5",
      ]);
    });
    // No window is open any more once its last start is a period old: the key's row goes.
    await alarmAt(stub, T0 + 2_000);
    await inFlow(stub, (host) => expect(host.rows("SELECT * FROM dk_tasks_flows")).toEqual([]));
  });

  it("refuses over the limit with tasks/rate-limited (retryable, nothing written) when asked to", async () => {
    const stub = fresh();
    await inFlow(stub, async (host) => {
      host.setClock(T0);
      await host.tasks.run("rateRefusing", { id: "a" });
      const error = await host.tasks.run("rateRefusing", { id: "b" }).catch((thrown) => thrown);
      expect(isTasksError(error, "tasks/rate-limited")).toBe(true);
      expect(error.retryable).toBe(true);
      expect(error.message).toContain(new Date(T0 + 1_000).toISOString());
      expect(host.tasks.list({ definition: "rateRefusing" }).items).toHaveLength(1);
      host.setClock(T0 + 1_000);
      expect((await host.tasks.run("rateRefusing", { id: "c" })).accepted).toBe(true);
    });
  });
});

describe("debounce", () => {
  it("collapses calls of one key into one run with the latest input, started once the key is quiet", async () => {
    const stub = fresh();
    const receipts = await inFlow(stub, async (host) => {
      host.setClock(T0);
      const first = await host.tasks.run("debounced", { id: "a", user: "u" });
      host.setClock(T0 + 50);
      const second = await host.tasks.run("debounced", { id: "b", user: "u" });
      const other = await host.tasks.run("debounced", { id: "z", user: "v" });
      host.setClock(T0 + 90);
      const third = await host.tasks.run("debounced", { id: "c", user: "u" });
      expect(host.tasks.get(first.runId)).toMatchObject({
        state: "queued",
        reason: "debounce",
        key: "u",
        wakeAt: T0 + 190,
      });
      return { first, second, third, other };
    });
    expect(receipts.first.accepted).toBe(true);
    expect(receipts.second).toMatchObject({
      runId: receipts.first.runId,
      accepted: false,
      joinedBy: "debounce",
      state: "queued",
    });
    expect(receipts.third.runId).toBe(receipts.first.runId);
    expect(receipts.other.runId).not.toBe(receipts.first.runId);
    await alarmAt(stub, T0 + 150);
    await inFlow(stub, (host) => expect(starts(host)).toEqual(["start:z"]));
    await alarmAt(stub, T0 + 190);
    await inFlow(stub, (host) => {
      expect(starts(host)).toEqual(["start:z", "start:c"]);
      expect(host.tasks.get(receipts.first.runId)?.state).toBe("completed");
      expect(host.tasks.list({ definition: "debounced" }).items).toHaveLength(2);
    });
  });

  it("starts a run called again and again at its maximum delay from the first call", async () => {
    const stub = fresh();
    await inFlow(stub, async (host) => {
      for (let t = 0; t <= 240; t += 60) {
        host.setClock(T0 + t);
        await host.tasks.run("debounced", { id: `t${t}`, user: "u" });
      }
      // maxDelayMs 250 from the first call, earlier than the quiet period after the last (340).
      const [runId] = host.runsIn("debounced", "queued");
      expect(host.tasks.get(runId as string)).toMatchObject({ wakeAt: T0 + 250 });
    });
    await alarmAt(stub, T0 + 249);
    await inFlow(stub, (host) => expect(starts(host)).toEqual([]));
    await alarmAt(stub, T0 + 250);
    await inFlow(stub, (host) => expect(starts(host)).toEqual(["start:t240"]));
    // A call after the run started opens a new window.
    await inFlow(stub, async (host) => {
      host.setClock(T0 + 260);
      expect((await host.tasks.run("debounced", { id: "late", user: "u" })).accepted).toBe(true);
    });
  });
});
