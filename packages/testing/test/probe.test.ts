import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { isTestingError, TESTING_SCHEMA_VERSION, TestingProbe } from "../src/index";

const fresh = () => env.FIXTURE.getByName(`probe-${crypto.randomUUID()}`);

describe("TestingProbe", () => {
  it("keeps its clock in the object's SQLite, so a new instance reads the same time", async () => {
    const stub = fresh();
    await runInDurableObject(stub, (_o, state) => {
      const probe = new TestingProbe(state);
      // A fresh probe's clock is the wall clock: read between two readings of it.
      const before = Date.now();
      const now = probe.now();
      expect(now).toBeGreaterThanOrEqual(before);
      expect(now).toBeLessThanOrEqual(Date.now());
      state.storage.sql.exec(
        "UPDATE dk_testing_settings SET value = 3600000 WHERE name = 'clock_offset'",
      );
      expect(
        state.storage.sql
          .exec<{ value: number }>(
            "SELECT value FROM dk_testing_meta WHERE name = 'schema_version'",
          )
          .one().value,
      ).toBe(TESTING_SCHEMA_VERSION);
    });
    // The fixture's instance and a second probe over the same storage agree.
    const [instanceNow, secondNow] = await runInDurableObject(stub, (o, state) => [
      o.probe.now(),
      new TestingProbe(state).now(),
    ]);
    expect(Math.abs((instanceNow ?? 0) - (secondNow ?? 0))).toBeLessThan(1_000);
  });

  it("runs instrumented definitions as the originals when no crash is armed", async () => {
    const stub = fresh();
    const { runId } = await runInDurableObject(stub, (o) =>
      o.tasks.run("demo.count@v1", { steps: 2 }),
    );
    for (;;) {
      const run = await runInDurableObject(stub, (o) => o.tasks.get(runId));
      if (run?.state === "completed") {
        expect(run.result).toEqual({ counted: 2 });
        break;
      }
      await scheduler.wait(2);
    }
  });

  it("refuses a ctx that is not an object's state, and definitions that are not handlers", async () => {
    expect(() => new TestingProbe({} as DurableObjectState)).toThrow(
      expect.objectContaining({ code: "testing/invalid-argument" }),
    );
    await runInDurableObject(fresh(), (_o, state) => {
      const probe = new TestingProbe(state);
      let thrown: unknown;
      try {
        probe.instrument({ "x@v1": 42 } as never);
      } catch (error) {
        thrown = error;
      }
      expect(isTestingError(thrown, "testing/invalid-argument")).toBe(true);
    });
  });
});
