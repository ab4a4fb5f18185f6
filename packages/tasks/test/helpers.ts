import { runInDurableObject } from "cloudflare:test";
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
