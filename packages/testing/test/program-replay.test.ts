import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { isTestingError, recordProgram, replayProgram } from "../src/index";
import type { Fixture } from "./fixtures/worker";

const fresh = () => env.FIXTURE.getByName(`program-${crypto.randomUUID()}`);

/** Charges twice through the host module and returns a receipt with a random id. */
const CHECKOUT = `import { chargeOnce } from "host:ledger";
export default async (input) => {
  await chargeOnce(input.amount);
  await chargeOnce(input.amount * 2);
  return { receipt: Math.random().toString(36).slice(2), total: input.amount * 3 };
};`;

describe("program recordings (recordProgram / replayProgram)", () => {
  it("replays a recorded program against today's code on the executor's own replay, calling no host function", async () => {
    const report = await runInDurableObject(fresh(), async (o: Fixture) => {
      await o.executor.execute(CHECKOUT, { amount: 5 }, { id: "co-1", onInterrupt: "replay" });
      const ledger = o.ledger().length;
      const recording = JSON.parse(JSON.stringify(recordProgram(o.executor, "co-1")));
      const same = await replayProgram(o.executor, recording);
      const appended = await replayProgram(o.executor, recording, {
        source: CHECKOUT.replace("return {", "await chargeOnce(1); return {"),
      });
      const changedCall = await replayProgram(o.executor, recording, {
        source: CHECKOUT.replace("input.amount * 2", "input.amount * 4"),
      });
      const fewerCalls = await replayProgram(o.executor, recording, {
        source: CHECKOUT.replace("await chargeOnce(input.amount * 2);", ""),
      });
      const changedResult = await replayProgram(o.executor, recording, {
        source: CHECKOUT.replace("input.amount * 3", "input.amount * 3 + 1"),
      });
      return {
        recording,
        same,
        appended,
        changedCall,
        fewerCalls,
        changedResult,
        charged: o.ledger().length - ledger,
      };
    });
    expect(report.recording).toMatchObject({
      format: "durablekit.program-run",
      version: 1,
      executionId: "co-1",
      end: { state: "completed" },
    });
    expect(report.recording.calls).toHaveLength(2);
    // The recorded randomness replays: the receipt is the same, so the run settles the same.
    expect(report.same).toEqual({ ok: true, outcome: "settled" });
    expect(report.appended).toEqual({ ok: true, outcome: "frontier" });
    expect(report.changedCall).toMatchObject({
      ok: false,
      kind: "diverged",
      code: "bridge/diverged",
    });
    expect(report.fewerCalls).toMatchObject({
      ok: false,
      kind: "diverged",
      code: "bridge/diverged",
    });
    expect(report.changedResult).toMatchObject({ ok: false, kind: "result", code: null });
    expect((report.changedResult as { message: string }).message).toContain('"total":15');
    // Nothing was charged by any replay.
    expect(report.charged).toBe(0);
  });

  it("refuses what is not a program recording, and a run that is not a replay run", async () => {
    const codes = await runInDurableObject(fresh(), async (o: Fixture) => {
      await o.executor.execute("export default () => 1;", undefined, { id: "plain" });
      const codeOf = async (fn: () => unknown) => {
        try {
          await fn();
          return "none";
        } catch (error) {
          return isTestingError(error) ? error.code : String(error);
        }
      };
      return {
        notReplay: await codeOf(() => recordProgram(o.executor, "plain")),
        missing: await codeOf(() => recordProgram(o.executor, "missing")),
        malformed: await codeOf(() => replayProgram(o.executor, { format: "x" } as never)),
      };
    });
    expect(codes).toEqual({
      notReplay: "testing/not-found",
      missing: "testing/not-found",
      malformed: "testing/invalid-argument",
    });
  });
});
