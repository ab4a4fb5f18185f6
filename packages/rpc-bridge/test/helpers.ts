import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { BridgeExecuteOptions, BridgeExecution } from "../src/index";
import type { Counters } from "./fixtures/modules";
import type { Fixture, ReplayFixture } from "./fixtures/worker";

/** A fresh fixture object per test. */
export function freshFixture(): DurableObjectStub<Fixture> {
  return env.FIXTURE.get(env.FIXTURE.newUniqueId());
}

/** Reads the fixture's counters. */
export function countersOf(stub: DurableObjectStub<Fixture>): Promise<Counters> {
  return runInDurableObject(stub, (instance: Fixture) => structuredClone({ ...instance.counters }));
}

/** Runs inside the fixture object. */
export function inFixture<T>(
  stub: DurableObjectStub<Fixture>,
  fn: (instance: Fixture, state: DurableObjectState) => T | Promise<T>,
): Promise<T> {
  return runInDurableObject(stub, fn);
}

/** Executes a program in the fixture object and answers how it ended. */
export function run(
  stub: DurableObjectStub<Fixture>,
  source: string,
  input?: unknown,
  options?: BridgeExecuteOptions,
): Promise<BridgeExecution> {
  return runInDurableObject(stub, (instance: Fixture) =>
    instance.executor.execute(source, input, options),
  );
}

/** A fresh replay fixture object per test. */
export function freshReplay(): DurableObjectStub<ReplayFixture> {
  return env.REPLAY.get(env.REPLAY.newUniqueId());
}

/** Runs inside the replay fixture object. */
export function inReplay<T>(
  stub: DurableObjectStub<ReplayFixture>,
  fn: (instance: ReplayFixture, state: DurableObjectState) => T | Promise<T>,
): Promise<T> {
  return runInDurableObject(stub, fn);
}

/** The replay fixture's stored counters. */
export function storedCounters(
  stub: DurableObjectStub<ReplayFixture>,
): Promise<Record<string, number>> {
  return runInDurableObject(stub, (instance: ReplayFixture) => instance.counters.read());
}
