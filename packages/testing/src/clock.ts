import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { check } from "./arguments";
import { busyIn } from "./fan-out-signal";
import { clockMoved, nextTimerAt } from "./handler-clock";
import { ProbeStore } from "./probe-store";

/** Options of {@link advanceTime}. */
export interface TestingAdvanceOptions {
  /** Most alarms run on the way (1,000): a run that re-arms forever stops here instead of looping. */
  maxAlarms?: number;
  /**
   * How long (real milliseconds) a live attempt may keep awaiting I/O before the clock moves on
   * without it (2,000 ms): the clock moves only once the object's attempts have parked or settled,
   * or await a timer on the test clock.
   */
  runningMs?: number;
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
 * Moves an object's test clock to `at` (never back) and fires the timers its handler code awaits
 * on the test clock that are due by then; the clock afterwards.
 */
export function moveClock(stub: DurableObjectStub, at: number): Promise<number> {
  return runInDurableObject(stub, (_instance, state) => {
    const store = new ProbeStore(state.storage);
    store.moveTo(at);
    const now = store.now();
    clockMoved(state.id.toString(), now);
    return now;
  });
}

/**
 * Waits (up to `runningMs` of real time) until no attempt of the object is at work: the clock must
 * not jump while a step awaits real I/O (a program's isolate, a fetch), or its sleep would start
 * days late and the timeouts it set on the test clock would fire under it. True when the object
 * is quiet; false when an attempt kept working through `runningMs` (it awaits the test clock).
 */
export async function untilQuiet(objectId: string, runningMs: number): Promise<boolean> {
  const since = Date.now();
  while (busyIn(objectId)) {
    if (Date.now() - since >= runningMs) return false;
    await scheduler.wait(1);
  }
  return true;
}

/**
 * Moves an object's test clock (its {@link TestingProbe}'s `now`) forward by `ms`, and runs every
 * alarm that falls due on the way, in order, each at its own time: a run that sleeps a week, backs
 * off between retries or waits for an event with a timeout goes through all of it in milliseconds,
 * and each wake sees the clock it would have seen — the parts through `now: probe.now`, the
 * handler's own code through `Date.now()`, `new Date()`, `setTimeout` and `scheduler.wait`, which
 * follow the test clock inside an instrumented handler (a timer it awaits fires when the clock
 * passes it). Alarms run with `runDurableObjectAlarm`, so the object's own `alarm()` (and every
 * part behind it) does the work.
 *
 * The clock moves only while the object is quiet: an attempt that still awaits I/O (the first
 * step of a run just started) is given up to `runningMs` to park or settle first, so a run started
 * right before `advanceTime` is driven, not overtaken.
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
  const runningMs = check.ms(options.runningMs, "runningMs", 2_000);
  const objectId = stub.id.toString();
  const target = (await testClockOf(stub)) + duration;
  let alarms = 0;
  // Once an attempt has kept working through runningMs it awaits the test clock (a timer): it is
  // not waited for again until the object has been quiet.
  let patient = true;
  while (alarms < maxAlarms) {
    if (patient) patient = await untilQuiet(objectId, runningMs);
    else if (!busyIn(objectId)) patient = true;
    const timer = nextTimerAt(objectId);
    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    const next = Math.min(timer ?? Number.POSITIVE_INFINITY, alarm ?? Number.POSITIVE_INFINITY);
    if (next > target) break;
    await moveClock(stub, next);
    if (alarm === null || alarm > next) continue;
    alarms++;
    if (!(await alarmOnTestClock(stub, objectId, target, runningMs))) break;
  }
  return { now: await moveClock(stub, target), alarms };
}

/**
 * Runs the object's alarm; while it runs (`Tasks.alarm()` waits for the attempts it starts) and
 * they have kept working through `runningMs`, fires the timers they await on the test clock, up to
 * `target`. False when no alarm ran.
 */
async function alarmOnTestClock(
  stub: DurableObjectStub,
  objectId: string,
  target: number,
  runningMs: number,
): Promise<boolean> {
  let ran: boolean | null = null;
  const alarm = runDurableObjectAlarm(stub).then((r) => {
    ran = r;
  });
  const since = Date.now();
  while (ran === null) {
    await Promise.race([alarm, scheduler.wait(1)]);
    const timer = nextTimerAt(objectId);
    if (ran === null && timer !== null && timer <= target && Date.now() - since >= runningMs) {
      await moveClock(stub, timer);
    }
  }
  return ran;
}
