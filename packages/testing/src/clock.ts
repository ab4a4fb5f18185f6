import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { createOptionChecks } from "@durablekit/compose";
import { TestingError } from "./errors";
import { ProbeStore } from "./probe-store";

const check = createOptionChecks(
  (message) => new TestingError("testing/invalid-argument", message),
);

/** Options of {@link advanceTime}. */
export interface TestingAdvanceOptions {
  /** Most alarms run on the way (1,000): a run that re-arms forever stops here instead of looping. */
  maxAlarms?: number;
}

/** What {@link advanceTime} did. */
export interface TestingAdvanceResult {
  /** The object's test clock afterwards, epoch milliseconds. */
  now: number;
  /** Alarms it ran on the way, in order. */
  alarms: number;
}

/** The test clock of an object with a {@link TestingProbe}, epoch milliseconds. */
export function testClockOf(stub: DurableObjectStub): Promise<number> {
  return runInDurableObject(stub, (_instance, state) => new ProbeStore(state.storage).now());
}

/**
 * Moves an object's test clock (its {@link TestingProbe}'s `now`) forward by `ms`, and runs every
 * alarm that falls due on the way, in order, each at its own time: a run that sleeps a week, backs
 * off between retries or waits for an event with a timeout goes through all of it in milliseconds,
 * and each wake sees the clock it would have seen. Alarms run with `runDurableObjectAlarm`, so the
 * object's own `alarm()` (and every part behind it) does the work; the attempts an alarm starts run
 * inside it (`Tasks.alarm()` waits for them).
 *
 * Only for an object whose parts read the probe's clock (`now: probe.now`).
 *
 * @throws TestingError `testing/invalid-argument` for a negative or non-finite `ms` or a bad option.
 */
export async function advanceTime(
  stub: DurableObjectStub,
  ms: number,
  options: TestingAdvanceOptions = {},
): Promise<TestingAdvanceResult> {
  const duration = check.ms(ms, "advanceTime(stub, ms): ms", 0);
  check.options(options, "advanceTime options");
  const maxAlarms = check.count(options.maxAlarms, "maxAlarms", 1_000);
  const target = (await testClockOf(stub)) + duration;
  let alarms = 0;
  for (; alarms < maxAlarms; alarms++) {
    const due = await runInDurableObject(stub, async (_instance, state) => {
      const at = await state.storage.getAlarm();
      if (at === null || at > target) return false;
      new ProbeStore(state.storage).moveTo(at);
      return true;
    });
    if (!due || !(await runDurableObjectAlarm(stub))) break;
  }
  const now = await runInDurableObject(stub, (_instance, state) => {
    const store = new ProbeStore(state.storage);
    store.moveTo(target);
    return store.now();
  });
  return { now, alarms };
}
