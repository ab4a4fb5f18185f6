import {
  env,
  evictDurableObject,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Orders } from "../src/index";
import { settled } from "./settled";

/** A fresh object per test: its own SQLite, its own alarm. */
const freshOrders = () => env.ORDERS.getByName(`test-${crypto.randomUUID()}`);

/** The run's snapshot, read inside the object (a snapshot's `unknown` result has no RPC type). */
const runOf = (orders: DurableObjectStub<Orders>, runId: string) =>
  runInDurableObject(orders, (instance) => instance.tasks.get(runId));

describe("an order", () => {
  it("waits for approval, sleeps through its cool-off and ships once", async () => {
    const orders = freshOrders();
    await orders.place({ orderId: "o-1", coolOffMs: 50 });
    expect(await runOf(orders, "o-1")).toMatchObject({ state: "waiting", reason: "event" });

    expect(await orders.approve("o-1", "ada")).toBe("delivered");
    const parked = await runOf(orders, "o-1");
    expect(parked).toMatchObject({ state: "waiting", reason: "sleep" });
    if (parked?.state !== "waiting") throw new Error("the order did not park on its sleep");

    // Past the deadline, run the object's alarm now instead of waiting for the runtime to fire it.
    await scheduler.wait(Math.max(0, (parked.wakeAt ?? 0) - Date.now()) + 5);
    await runDurableObjectAlarm(orders);
    const done = await settled(() => runOf(orders, "o-1"));
    expect(done).toMatchObject({ state: "completed", result: { total: 42, approvedBy: "ada" } });

    // Inside the object: the stream the last step wrote holds one chunk and is closed.
    await runInDurableObject(orders, (instance) => {
      const page = instance.streams.readPage("order:o-1");
      expect(page.chunks.map((chunk) => chunk.chunk)).toEqual([{ shipped: true, by: "ada" }]);
      expect(page.state).toBe("completed");
    });
  });

  it("keeps a parked run across an eviction of the object", async () => {
    const orders = freshOrders();
    await orders.place({ orderId: "o-2", coolOffMs: 50 });
    await evictDurableObject(orders); // a fresh instance next time: memory gone, SQLite kept

    expect(await runOf(orders, "o-2")).toMatchObject({ state: "waiting", reason: "event" });
    expect(await orders.approve("o-2", "grace")).toBe("delivered");
    await scheduler.wait(60);
    await runDurableObjectAlarm(orders);
    expect(await settled(() => runOf(orders, "o-2"))).toMatchObject({ state: "completed" });
  });
});
