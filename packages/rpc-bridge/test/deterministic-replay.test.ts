import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { anotherInstance } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { Executor } from "../src/index";
import type { ReplayFixture } from "./fixtures/worker";
import { freshReplay, inReplay, storedCounters } from "./helpers";

/**
 * Every source of nondeterminism a program commonly touches, observed before the object restarts
 * and handed to a journaled call (`echo`), then observed again: a replay that did not reproduce
 * them would fail (the echo's arguments would differ from its journal entry's) or return
 * `echoed` different from `seen`.
 */
const PROGRAM = `
  import { echo, slow } from "test:replay";
  export default async function () {
    const seen = [Date.now(), performance.now(), Math.random(), crypto.randomUUID()];
    seen.push(Array.from(crypto.getRandomValues(new Uint8Array(4))));
    await new Promise((resolve) => setTimeout(resolve, 50));
    seen.push(Date.now());
    // Two host calls with different latencies: the quicker wins live; on replay both are answered
    // from the journal at once, the slower (issued first) first, and the recorded order decides.
    const winner = await Promise.race([
      slow(150).then(() => "slow"),
      slow(5).then(() => "fast"),
    ]);
    seen.push(winner, Date.now(), Math.random());
    const echoed = await echo(seen);
    // The object restarts while this call is in flight.
    await slow(1000);
    return { echoed, seen, after: [Date.now() >= seen[0], Math.random(), crypto.randomUUID()] };
  }
`;

type Result = { echoed: unknown[]; seen: unknown[]; after: unknown[] };

/** Starts PROGRAM as `id` and waits until both raced calls have ended and the last call is in flight. */
async function startedToTheLastCall(id: string): Promise<DurableObjectStub<ReplayFixture>> {
  const stub = freshReplay();
  await stub.start(PROGRAM, id);
  for (;;) {
    const c = await storedCounters(stub);
    if ((c.slowStarts ?? 0) >= 3 && (c.slowEnds ?? 0) >= 2) return stub;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Recovers `id` by the executor's alarm and answers its record, which must be completed on attempt 2. */
async function recovered(stub: DurableObjectStub<ReplayFixture>, id: string): Promise<Result> {
  expect(await runDurableObjectAlarm(stub)).toBe(true);
  const record = await inReplay(stub, (instance) => instance.executor.get(id));
  expect(record).toMatchObject({ state: "completed", attempt: 2 });
  const result = record?.result as Result;
  // What the first attempt saw (journaled with echo) is what the replay saw again.
  expect(result.echoed).toEqual(result.seen);
  expect(result.seen[6]).toBe("fast");
  // The 50 ms timer advanced the virtual clock by exactly its delay.
  expect(result.seen[5]).toBe((result.seen[0] as number) + 50);
  expect(result.after[0]).toBe(true);
  return result;
}

describe("deterministic replay, end to end", () => {
  it("returns the identical result after an eviction mid-run: clock, randomness, timers and a Promise.race of two host calls replay as recorded", async () => {
    const stub = await startedToTheLastCall("det-evict");
    // Eviction lets the call in flight finish (it is journaled), then drops the instance mid-run.
    await evictDurableObject(stub);
    await recovered(stub, "det-evict");
    // Every call was answered from the journal on the second attempt.
    expect(await storedCounters(stub)).toMatchObject({ echoes: 1, slowStarts: 3 });
  });

  it("returns the identical result after a restart with a host call in flight, which alone runs again", async () => {
    const stub = await startedToTheLastCall("det-crash");
    // ctx.abort() resets the instance under the call in flight; storage (and the alarm) stay.
    await stub.crash().catch(() => {});
    const restarted = env.REPLAY.get(stub.id);
    await recovered(restarted, "det-crash");
    expect(await storedCounters(restarted)).toMatchObject({ echoes: 1, slowStarts: 4 });
  });

  it("runs a replay run under the executor's default compatibility date", async () => {
    // Regression: the isolate's timers once called the platform's clearTimeout as a method, which
    // workerd refuses ("Illegal invocation") before the 2026-11-01 compatibility date.
    const execution = await runInDurableObject(freshReplay(), (_instance, state) =>
      new Executor(anotherInstance(state), {
        loader: env.LOADER,
        modules: { "test:echo": { echo: ([value]: [unknown]) => value } },
        onInterrupt: "replay",
      }).execute(`
        import { echo } from "test:echo";
        export default async function () {
          await new Promise((resolve) => setTimeout(resolve, 5));
          return echo([typeof Date.now(), typeof Math.random(), crypto.randomUUID().length]);
        }`),
    );
    expect(execution).toMatchObject({ state: "completed", result: ["number", "number", 36] });
  });
});
