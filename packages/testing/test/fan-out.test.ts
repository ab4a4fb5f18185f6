import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { crashFanOut, type TestingFanOutOptions } from "../src/index";
import type { FanInput, FanParent, FanShard } from "./fixtures/fan-out";

/** The crash test of `fan@v1` over two shards, their ledgers as the fan-out's effects. */
function fanOut(charge: FanInput["charge"]): TestingFanOutOptions<FanParent, FanShard> {
  const world = crypto.randomUUID();
  let n = 0;
  return {
    namespace: env.FAN_PARENT,
    namespaces: env,
    tasks: (o) => o.tasks,
    // Fresh shard objects for every run (and for every test).
    start: (o) => o.tasks.run("fan@v1", { prefix: `${world}-${++n}`, shards: 2, charge }),
    effects: { children: (o) => o.ledger() },
  };
}

describe("crashFanOut", () => {
  it("passes a fan-out whose children charge by idempotency key, crashing both sides and losing and duplicating every message", async () => {
    const report = await crashFanOut(fanOut("charge@v1"));
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.baseline).toMatchObject({ state: "completed" });
    expect(
      Object.fromEntries(
        Object.entries(report.boundaries).map(([object, list]) => [
          object,
          list.map((b) => b.label),
        ]),
      ),
    ).toEqual({
      parent: ["do:start 0", "do:start 1", "event:all", "settle"],
      "start 0#0": ["do:charge", "settle"],
      "start 1#0": ["do:charge", "settle"],
    });
    expect(report.messages.map((m) => [m.label, m.object]).sort()).toEqual([
      ["settled:start 0#0", "parent"],
      ["settled:start 1#0", "parent"],
      ["start:start 0#0", "start 0#0"],
      ["start:start 1#0", "start 1#0"],
    ]);
    // Parent: 4 boundaries, both sides but the settle's; each child: 2, likewise; 4 messages, 3 faults each.
    expect(report.cases).toHaveLength(7 + 3 + 3 + 12);
    // Every crash landed and every message fault was done to its message.
    expect(report.cases.filter((c) => !c.fired)).toEqual([]);
    const faulted = report.cases.filter((c) => c.position !== "before" && c.position !== "after");
    expect(faulted.map((c) => c.position).sort()).toEqual(
      ["duplicate", "lose", "lose-reply"].flatMap((f) => [f, f, f, f]).sort(),
    );
    // The crash inside a child's charge really cut it: its body ran again, and its key kept it once.
    expect(
      report.cases
        .filter((c) => c.reran.length > 0)
        .map((c) => [c.object, c.boundary, c.position, c.reran]),
    ).toEqual([
      ["start 0#0", "do:charge", "before", ["start 0#0/charge"]],
      ["start 1#0", "do:charge", "before", ["start 1#0/charge"]],
    ]);
  }, 120_000);

  it("reports a child that charges under a fresh key, naming the child object and its boundary", async () => {
    const report = await crashFanOut({ ...fanOut("charge.unsafe@v1"), faults: ["duplicate"] });
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => [p.kind, p.object, p.boundary, p.position, p.steps])).toEqual(
      [
        ["effects", "start 0#0", "do:charge", "before", ["start 0#0/charge"]],
        ["effects", "start 1#0", "do:charge", "before", ["start 1#0/charge"]],
      ],
    );
    expect(report.problems[0]?.message).toMatch(
      /a crash before do:charge in start 0#0 .*charge 1.*charge 1.*step "start 0#0\/charge" ran again/,
    );
    // Duplicated starts and settlements are applied once: the engine's exactly-once holds.
    expect(
      report.cases.filter((c) => c.position === "duplicate").every((c) => c.ok && c.fired),
    ).toBe(true);
  }, 120_000);
});
