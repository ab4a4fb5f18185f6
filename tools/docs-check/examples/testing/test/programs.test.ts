import { env, runInDurableObject } from "cloudflare:test";
import { recordProgram, replayProgram } from "@durablekit/testing";
import { expect, it } from "vitest";

const CHECKOUT = `import { charge } from "host:payments";
export default async ({ orderId, amount }) => {
  const paid = await charge(orderId, amount);
  return { receipt: \`\${orderId}:\${paid.amount}\` };
};`;

it("replays a recorded checkout program against today's code, charging nothing", async () => {
  const orders = env.ORDERS.getByName(`test-${crypto.randomUUID()}`);
  await orders.checkout(CHECKOUT, { orderId: "o-7", amount: 42 });
  const recording = await runInDurableObject(orders, (o) =>
    recordProgram(o.executor, "checkout:o-7"),
  );
  // Plain JSON (its seed and start time are the run's own): keep it beside the tests to replay
  // later code against it.
  const today = CHECKOUT.replace("return {", "await charge(orderId, 1); return {");
  const reports = await runInDurableObject(orders, async (o) => ({
    same: await replayProgram(o.executor, recording),
    appended: await replayProgram(o.executor, recording, { source: today }),
    changed: await replayProgram(o.executor, recording, {
      source: CHECKOUT.replace("charge(orderId, amount)", "charge(orderId, amount * 2)"),
    }),
  }));
  expect(reports.same).toEqual({ ok: true, outcome: "settled" });
  // A call after the last recorded one is new ground: a run in flight would make it live.
  expect(reports.appended).toEqual({ ok: true, outcome: "frontier" });
  expect(reports.changed).toMatchObject({ ok: false, kind: "diverged", code: "bridge/diverged" });
});
