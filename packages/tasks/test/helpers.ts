import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Fixture } from "./fixtures/worker";

/** A fresh fixture object for one test. */
export function freshFixture(): DurableObjectStub<Fixture> {
  return env.FIXTURE.getByName(`t-${crypto.randomUUID()}`);
}

/** Runs `fn` inside a fresh fixture object (or the given one). */
export function inFixture<T>(
  fn: (instance: Fixture, state: DurableObjectState) => Promise<T> | T,
  stub: DurableObjectStub<Fixture> = freshFixture(),
): Promise<T> {
  return runInDurableObject(stub, fn);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Makes a run due now, as a wake arriving early would (test-only reach into the engine's table). */
export function makeDue(state: DurableObjectState, runId: string): void {
  state.storage.sql.exec(
    "UPDATE dk_tasks_runs SET next_at = ? WHERE run_id = ?",
    Date.now(),
    runId,
  );
}

/** Waits (polling) until step callback `name` has run at least `n` times in the fixture. */
export async function untilExecuted(fixture: Fixture, name: string, n = 1): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    if ((fixture.executions()[name] ?? 0) >= n) return;
    await sleep(5);
  }
  throw new Error(`step "${name}" did not run ${n} times: ${JSON.stringify(fixture.executions())}`);
}

/**
 * Kills every object (as a crash would), waits past the fixture's claim deadline (300 ms) and fires
 * the object's alarm, which reclaims what its dead attempt held. Answers a stub of the new instance:
 * a stub connected to an aborted object stays broken.
 */
export async function crashAndWake(
  stub: DurableObjectStub<Fixture>,
): Promise<DurableObjectStub<Fixture>> {
  await abortAllDurableObjects();
  const fresh = env.FIXTURE.get(stub.id);
  await sleep(350);
  await runDurableObjectAlarm(fresh);
  return fresh;
}
