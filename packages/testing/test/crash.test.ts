import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { crashEverywhere, type TestingCrashOptions } from "../src/index";
import type { Fixture } from "./fixtures/worker";

/** The crash test of one of the fixture's definitions, with its ledger as the run's effects. */
function ledgerRun(
  definition: "ledger.safe@v1" | "ledger.unsafe@v1",
): TestingCrashOptions<Fixture> {
  return {
    namespace: env.FIXTURE,
    tasks: (o) => o.tasks,
    start: (o) => o.tasks.run(definition, { amount: 5 }),
    effects: (o) => o.ledger(),
  };
}

describe("crashEverywhere", () => {
  it("reports a step that writes outside the journal without its idempotency key, naming the step and the boundary", async () => {
    const report = await crashEverywhere(ledgerRun("ledger.unsafe@v1"));
    expect(report.boundaries.map((b) => [b.label, b.async])).toEqual([
      ["do:reserve", false],
      ["do:charge", true],
      ["sleep:settle-up", false],
      ["do:receipt", false],
      ["settle", false],
    ]);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: "effects",
        boundary: "do:charge",
        position: "before",
        steps: ["charge"],
      }),
    ]);
    expect(report.problems[0]?.message).toMatch(/step "charge" ran again/);
  });

  it("passes a safe definition at every boundary, crashing before and after each", async () => {
    const report = await crashEverywhere(ledgerRun("ledger.safe@v1"));
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    // Five boundaries, both sides of each but the settle's.
    expect(report.cases).toHaveLength(9);
    expect(report.baseline).toMatchObject({ state: "completed", result: "charged 5" });
    // The crash inside the charge really cut it: its body ran again, and its key kept it once.
    expect(report.cases.filter((c) => c.reran.length > 0)).toEqual([
      { boundary: "do:charge", index: 1, position: "before", reran: ["charge"], ok: true },
    ]);
  });

  it("passes demo.count@v1 everywhere, its stream holding every chunk once, in order", async () => {
    let n = 0;
    const report = await crashEverywhere<Fixture>({
      namespace: env.FIXTURE,
      tasks: (o) => o.tasks,
      start: (o) => o.tasks.run("demo.count@v1", { steps: 5, stream: `count-${++n}` }),
      streams: (o) => {
        const id = `count-${n}`;
        return { count: o.streams.readPage(id).chunks.map((c) => c.chunk) };
      },
    });
    expect(report.problems).toEqual([]);
    expect(report.boundaries.map((b) => b.label)).toEqual([
      "do:step-0",
      "do:step-1",
      "do:step-2",
      "do:step-3",
      "do:step-4",
      "settle",
    ]);
    expect(report.cases).toHaveLength(11);
  });

  it("passes demo.approval@v1 everywhere, its approval delivered as an event", async () => {
    const report = await crashEverywhere({
      namespace: env.FIXTURE,
      tasks: (o) => o.tasks,
      start: (o) => o.tasks.run("demo.approval@v1", { timeoutMs: 86_400_000 }),
      events: { approve: { by: "ada" } },
    });
    expect(report.problems).toEqual([]);
    expect(report.baseline).toMatchObject({ state: "completed", result: { by: "ada" } });
    expect(report.boundaries.map((b) => b.label)).toEqual(["event:approve", "settle"]);
    expect(report.cases).toHaveLength(3);
  });

  it("reports a stream that holds a chunk twice after a step appended without its producer seq", async () => {
    let n = 0;
    const report = await crashEverywhere({
      namespace: env.FIXTURE,
      tasks: (o) => o.tasks,
      start: (o) => o.tasks.run("stream.unsafe@v1", { stream: `unsafe-${++n}` }),
      streams: (o) => ({ log: o.streams.readPage(`unsafe-${n}`).chunks.map((c) => c.chunk) }),
    });
    expect(report.problems.map((p) => [p.kind, p.boundary, p.position, p.steps])).toEqual([
      ["stream", "do:append-0", "before", ["append-0"]],
      ["stream", "do:append-1", "before", ["append-1"]],
    ]);
    expect(report.problems[0]?.message).toContain('[{"i":0},{"i":0},{"i":1}]');
  });
});

describe("crashEverywhere within the uninterrupted run", () => {
  it("reports a step whose retry charges again under a fresh key, and shows the baseline's effects", async () => {
    const report = await crashEverywhere<Fixture>({
      namespace: env.FIXTURE,
      tasks: (o) => o.tasks,
      start: (o) => o.tasks.run("ledger.retried@v1", { amount: 5 }),
      effects: (o) => o.ledger(),
    });
    // The plain run charged twice, which no comparison with it can show: it is reported itself.
    expect(report.baselineEffects).toEqual(["charge 5", "charge 5"]);
    expect(report.problems[0]).toEqual(
      expect.objectContaining({
        kind: "effects",
        boundary: "do:charge",
        position: "retry",
        steps: ["charge"],
      }),
    );
    expect(report.problems[0]?.message).toMatch(/retry did again .*"charge 5"/);
    expect(report.ok).toBe(false);
  });

  it("passes the same retried step keyed by its idempotency key", async () => {
    const report = await crashEverywhere<Fixture>({
      namespace: env.FIXTURE,
      tasks: (o) => o.tasks,
      start: (o) => o.tasks.run("ledger.retried-safe@v1", { amount: 5 }),
      effects: (o) => o.ledger(),
    });
    expect(report.baselineEffects).toEqual(["charge 5"]);
    expect(report.problems).toEqual([]);
  });

  it("gets no problem for ids and times made inside steps and keys holding the engine's run id", async () => {
    const report = await crashEverywhere<Fixture>({
      namespace: env.FIXTURE,
      tasks: (o) => o.tasks,
      start: (o) => o.tasks.run("order@v1", { amount: 5 }),
      effects: (o) => o.ledgerRows(),
    });
    expect(report.cases).toHaveLength(9);
    expect(report.problems).toEqual([]);
    // Every run made its own order id and key: what is compared is where it made them.
    expect(report.baselineEffects).toEqual([
      {
        key: expect.stringMatching(/^task_.+:charge$/),
        entry: expect.stringMatching(/^charge 5 for [0-9a-f-]{36} at \d+$/),
      },
    ]);
  });

  it("still reports an order id made outside a step", async () => {
    const report = await crashEverywhere<Fixture>({
      namespace: env.FIXTURE,
      tasks: (o) => o.tasks,
      start: (o) => o.tasks.run("ledger.unsafe@v1", { amount: 5 }),
      effects: (o) => o.ledgerRows(),
    });
    expect(report.problems.map((p) => [p.kind, p.boundary, p.position])).toContainEqual([
      "effects",
      "do:charge",
      "before",
    ]);
  });
});

describe("crashEverywhere on long runs", () => {
  for (const steps of [20, 50]) {
    it(`explores every boundary of a ${steps}-step demo.count@v1 run`, async () => {
      let n = 0;
      const report = await crashEverywhere({
        namespace: env.FIXTURE,
        tasks: (o) => o.tasks,
        start: (o) => o.tasks.run("demo.count@v1", { steps, stream: `long-${++n}` }),
        streams: (o) => ({ count: o.streams.readPage(`long-${n}`).chunks.map((c) => c.chunk) }),
      });
      expect(report.problems).toEqual([]);
      expect(report.boundaries).toHaveLength(steps + 1);
      expect(report.cases).toHaveLength(2 * steps + 1);
      // Figures for the note (not asserted: tests never assert wall time).
      console.info(
        `demo.count@v1, ${steps} steps: ${report.boundaries.length} boundaries, ${report.cases.length} crashes, ${report.ms} ms`,
      );
    }, 120_000);
  }
});

describe("crashEverywhere over a program's step journal", () => {
  const programRun = (
    definition: "program.safe@v1" | "program.unsafe@v1",
  ): TestingCrashOptions<Fixture> => ({
    namespace: env.FIXTURE,
    tasks: (o) => o.tasks,
    start: (o) => o.tasks.run(definition, { amount: 5 }),
    effects: (o) => o.ledger(),
  });

  it("reports a host module that is not idempotent by callId, naming the call and its journal key", async () => {
    const report = await crashEverywhere(programRun("program.unsafe@v1"));
    expect(report.boundaries.map((b) => [b.label, b.call])).toEqual([
      ["journal:program:1", "host:ledger.charge"],
      ["journal:program:2", "host:ledger.charge"],
      ["do:program", null],
      ["settle", null],
    ]);
    expect(report.baseline).toMatchObject({ state: "completed", result: 11 });
    expect(report.problems.map((p) => [p.kind, p.boundary, p.position, p.call])).toEqual([
      ["effects", "journal:program:1", "before", "host:ledger.charge"],
      ["effects", "journal:program:2", "before", "host:ledger.charge"],
    ]);
    expect(report.problems[0]?.message).toMatch(
      /host call host:ledger\.charge ran and its outcome was not yet written.*idempotent by ctx\.callId/,
    );
  });

  it("passes the same program over host calls keyed by callId, crashing before and after each journal row", async () => {
    const report = await crashEverywhere(programRun("program.safe@v1"));
    expect(report.problems).toEqual([]);
    expect(report.baseline).toMatchObject({ state: "completed", result: 11 });
    // Two journal rows, the step, the settle: both sides of each but the settle's.
    expect(report.cases).toHaveLength(7);
    // Cut before its row, a call ran again on replay (and its key kept the charge once).
    expect(
      report.cases.filter((c) => c.boundary.startsWith("journal:")).map((c) => c.reran),
    ).toEqual([["program"], ["program"], ["program"], ["program"]]);
  });
});
