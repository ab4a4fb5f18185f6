import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { append, control, hub, receiver, sleep, until, webhook } from "./helpers-subscriptions";

describe("subscriptions: a handler without a hub", () => {
  it("writes no notice and makes no call: an append costs what it did", async () => {
    const stub = env.FIXTURE.getByName(`no-hub-${crypto.randomUUID()}`);
    const url = "https://streams.test/v1/stream/plain";
    expect(
      (await stub.fetch(url, { method: "PUT", headers: { "content-type": "application/json" } }))
        .status,
    ).toBe(201);
    expect(
      (
        await stub.fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "[1,2]",
        })
      ).status,
    ).toBe(204);
    const tables = await runInDurableObject(stub, (_object, state) =>
      state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE name LIKE 'dk_sse_%'")
        .toArray()
        .map((row) => row.name),
    );
    expect(tables).toEqual([]);
    // Its reserved routes say what is missing.
    const reserved = await stub.fetch("https://streams.test/v1/stream/__ds/subscriptions/x");
    expect(reserved.status).toBe(501);
  });
});

describe("subscriptions: webhook delivery", () => {
  it("delivers each append's batch to a signed receiver, which applies every chunk once and acknowledges the wake", async () => {
    const stream = "orders/a";
    await append(stream, { n: 0 });
    expect((await control("subscriptions/orders", webhook("orders", [stream]))).status).toBe(201);
    await append(stream, { n: 1 }, { n: 2 });
    const applied = await until(
      () => receiver("orders").applied(),
      (seen) => (seen[stream]?.length ?? 0) === 2,
    );
    // Linked at seq 1 (its tail then): the batch is seqs 1 and 2.
    expect(applied[stream]).toEqual([1, 2]);
    const view = await until(
      () => control("subscriptions/orders"),
      (got) =>
        (got.body.streams as { acked_offset: string }[])[0]?.acked_offset ===
        "0000000000000003_0000000000000000",
    );
    expect(view.body.status).toBe("active");
    expect(view.body.wake).toBeUndefined();
    await control("subscriptions/orders", { method: "DELETE" });
  });

  it("keeps telling the hub after a pass that found nothing to tell (regression: an empty pass blocked every later notice)", async () => {
    const stream = "orders/empty-pass";
    await append(stream, { n: 0 });
    expect((await control("subscriptions/orders", webhook("orders", [stream]))).status).toBe(201);
    const object = env.SUB_STREAM.getByName(stream);
    await until(
      () => object.notices(),
      (count) => count === 0,
    );
    // The alarm's pass finds no notice, as does a delivery pass at the hub.
    await runDurableObjectAlarm(object);
    await runDurableObjectAlarm(hub());
    for (let n = 1; n <= 3; n++) {
      await append(stream, { n });
      await until(
        () => receiver("orders").applied(),
        (seen) => (seen[stream]?.length ?? 0) === n,
      );
    }
    await control("subscriptions/orders", { method: "DELETE" });
  });

  it("takes a forged, repeated or malformed streamChanged as a reason to look, never as data", async () => {
    const stream = "orders/forged";
    await append(stream, { n: 0 });
    expect((await control("subscriptions/orders", webhook("orders", [stream]))).status).toBe(201);
    // Nothing was appended since the link: calls claiming a change open no wake and deliver nothing.
    for (const id of [
      stream,
      stream,
      "orders/never-created",
      "__ds/subscriptions/orders",
      "",
      "a/../b",
    ]) {
      await hub().streamChanged(id);
    }
    const view = await control("subscriptions/orders");
    expect(view.body.wake).toBeUndefined();
    expect((view.body.streams as { acked_offset: string }[])[0]?.acked_offset).toBe(
      "0000000000000001_0000000000000000",
    );
    expect((await receiver("orders").applied())[stream]).toBeUndefined();
    await control("subscriptions/orders", { method: "DELETE" });
  });

  it("survives a crash between the append and the hub hearing of it: the notice in the stream's object is delivered by its alarm", async () => {
    const stream = "crash/notice";
    await append(stream, { n: 0 });
    expect((await control("subscriptions/crash", webhook("crash", [stream]))).status).toBe(201);
    await env.SUB_STREAM.getByName(stream).setHoldNotices(true);
    const before = Date.now();
    await append(stream, { n: 1 });
    expect(await env.SUB_STREAM.getByName(stream).notices()).toBe(1);
    // The notice's backstop: the alarm is set for 2 s after the change at the latest.
    const alarm = (await env.SUB_STREAM.getByName(stream).alarmAt()) as number;
    expect(alarm).toBeGreaterThan(before);
    expect(alarm).toBeLessThanOrEqual(Date.now() + 2_000);
    await abortAllDurableObjects();
    // A new instance: the notice row survived the crash; its alarm tells the hub.
    const fresh = env.SUB_STREAM.getByName(stream);
    expect(await fresh.notices()).toBe(1);
    // The alarm was set, with the notice, for 2 s after the change (its backstop).
    expect(await runDurableObjectAlarm(fresh)).toBe(true);
    const applied = await until(
      () => receiver("crash").applied(),
      (seen) => (seen[stream]?.length ?? 0) === 1,
    );
    expect(applied[stream]).toEqual([1]);
    expect(await fresh.notices()).toBe(0);
    await control("subscriptions/crash", { method: "DELETE" });
  });

  it("retries a notice the hub did not take after 1 s, then 2 s, and delivers it once the hub answers", async () => {
    const stream = "orders/unreachable";
    await append(stream, { n: 0 });
    expect((await control("subscriptions/orders", webhook("orders", [stream]))).status).toBe(201);
    const object = env.SUB_STREAM.getByName(stream);
    await object.setFailNotices(true);
    await append(stream, { n: 1 });
    const first = await until(
      () => object.noticeFailures(),
      (failures) => failures.length === 1,
    );
    expect(first).toEqual([[1, 1_000]]);
    // The alarm's pass leaves a notice alone until its retry is due, then tries it again.
    await runDurableObjectAlarm(object);
    expect(await object.noticeFailures()).toHaveLength(1);
    await sleep(1_300);
    await runDurableObjectAlarm(object);
    const second = await until(
      () => object.noticeFailures(),
      (failures) => failures.length === 2,
    );
    expect(second).toEqual([
      [1, 1_000],
      [2, 2_000],
    ]);
    await object.setFailNotices(false);
    await sleep(2_600);
    await runDurableObjectAlarm(object);
    const applied = await until(
      () => receiver("orders").applied(),
      (seen) => (seen[stream]?.length ?? 0) === 1,
    );
    expect(applied[stream]).toEqual([1]);
    expect(await object.notices()).toBe(0);
    await control("subscriptions/orders", { method: "DELETE" });
  }, 15_000);

  it("redelivers a webhook cut off by a crash mid-delivery, and the idempotent receiver applies its chunks once", async () => {
    const stream = "crash/delivery";
    await append(stream, { n: 0 });
    const created = await control("subscriptions/crash-2", {
      ...webhook("crash-2", [stream], "crash-2"),
    });
    expect(created.status).toBe(201);
    await receiver("crash-2").setMode("hang");
    await append(stream, { n: 1 }, { n: 2 });
    await until(
      () => receiver("crash-2").batches(),
      (rows) => rows.length === 1,
    );
    await abortAllDurableObjects();
    // The attempt was recorded before it went out: due again after the delivery timeout.
    await hub().skew(15_000);
    await runDurableObjectAlarm(hub());
    const applied = await until(
      () => receiver("crash-2").applied(),
      (seen) => (seen[stream]?.length ?? 0) === 2,
    );
    expect(applied[stream]).toEqual([1, 2]);
    // The batch came twice (the cut-off attempt and the retry); its chunks were applied once.
    expect((await receiver("crash-2").batches()).length).toBe(2);
    await hub().skew(0);
    await control("subscriptions/crash-2", { method: "DELETE" });
  });
});
