import { env, runInDurableObject } from "cloudflare:test";
import type { TaskStep } from "@durablekit/tasks";
import {
  advanceTime,
  crashEverywhere,
  recordRun,
  replayAgainst,
  testClockOf,
} from "@durablekit/testing";
import { describe, expect, it } from "vitest";
import type { OrderInput } from "../src/index";

const DAY = 86_400_000;
const freshOrders = () => env.ORDERS.getByName(`test-${crypto.randomUUID()}`);

describe("an order's durability", () => {
  it("cools off for a week in milliseconds", async () => {
    const orders = freshOrders();
    await orders.place({ orderId: "o-3", coolOffMs: 7 * DAY });
    await orders.approve("o-3", "ada");
    // The test clock moves a week on, running the object's alarm at each wake on the way.
    await advanceTime(orders, 7 * DAY);
    const run = await runInDurableObject(orders, (o) => o.tasks.get("o-3"));
    expect(run).toMatchObject({ state: "completed", result: { total: 42, approvedBy: "ada" } });
  });

  it("reads two days on from the handler's own Date.now()", async () => {
    const orders = freshOrders();
    const payBy = (await testClockOf(orders)) + DAY;
    // advanceTime right after the run starts: the clock moves once its first step has parked.
    await orders.remind("o-6", payBy);
    await advanceTime(orders, 2 * DAY);
    const run = await runInDurableObject(orders, (o) => o.tasks.get("remind:o-6"));
    expect(run).toMatchObject({ state: "completed", result: "overdue" });
  });

  it("replays a recorded order against the current code", async () => {
    const orders = freshOrders();
    await orders.place({ orderId: "o-4", coolOffMs: DAY });
    await orders.approve("o-4", "grace");
    await advanceTime(orders, DAY);
    const recording = await runInDurableObject(orders, (o) => recordRun(o.tasks, "o-4"));
    // Commit the recording beside the tests; `vitest -u` writes it again.
    await expect(`${JSON.stringify(recording, null, 2)}\n`).toMatchFileSnapshot(
      "./recordings/order.json",
    );
    const report = await runInDurableObject(orders, (o) =>
      replayAgainst(o.definitions()["order@v1"], recording),
    );
    expect(report).toEqual({ ok: true, outcome: "settled", replayed: 4 });

    // A step appended after the last one a recorded run reached is new ground, not a divergence.
    const appended = await runInDurableObject(orders, (o) => {
      const current = o.definitions()["order@v1"];
      return replayAgainst(async (input: OrderInput, step: TaskStep) => {
        const result = await current(input, step);
        await step.do("thank", () => "sent");
        return result;
      }, recording);
    });
    expect(appended).toEqual({ ok: true, outcome: "frontier", replayed: 4 });
  });

  it("settles the same and ships once whatever boundary the object dies at", async () => {
    // Each run gets a fresh object, so every run can use the same ids.
    const report = await crashEverywhere({
      namespace: env.ORDERS,
      tasks: (o) => o.tasks,
      start: (o) => o.place({ orderId: "o-5", coolOffMs: DAY }),
      events: { approve: { by: "ada" } },
      streams: (o) => ({
        "order:o-5": o.streams.readPage("order:o-5").chunks.map((chunk) => chunk.chunk),
      }),
    });
    expect(report.problems).toEqual([]);
    expect(report.boundaries.map((b) => b.label)).toEqual([
      "do:price",
      "event:approval",
      "sleep:cool-off",
      "do:ship",
      "settle",
    ]);
  });
});
