import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The test clock as the handler's own code sees it. Inside an instrumented handler (and every step
 * body, promise continuation and timer it starts) `Date.now()`, `new Date()`, `setTimeout` and
 * `scheduler.wait` follow the object's test clock instead of real time; everywhere else they are
 * the platform's. The scope is an `AsyncLocalStorage` entered by the probe around each attempt, so
 * two objects in the isolate each see their own clock, and code outside a probe sees real time.
 *
 * A timer set inside the scope is due at the test clock's `now + ms`: it fires when real time gets
 * there, or as soon as a test moves the object's clock past it ({@link clockMoved}), whichever
 * comes first. Under `@cloudflare/vitest-plugin` the objects under test and the test share one
 * isolate, so the test's helpers reach those timers through this module's state.
 */

/** The clock of one object under test. */
export interface ClockScope {
  objectId: string;
  now(): number;
  /** True in the object's own turns, false in another object the scope's async context reached (an RPC). */
  here(): boolean;
}

interface ScopedTimer {
  due: number;
  real: ReturnType<typeof setTimeout>;
  fire(): void;
}

const scope = new AsyncLocalStorage<ClockScope>();
const RealDate = globalThis.Date;
const realDateNow = RealDate.now.bind(RealDate);
const realSetTimeout = globalThis.setTimeout.bind(globalThis);
const realClearTimeout = globalThis.clearTimeout.bind(globalThis);
/** Timers set on a test clock and not fired yet, by object id. */
const timers = new Map<string, Set<ScopedTimer>>();
/** Real timer handles of scoped timers: `clearTimeout` of one forgets it. */
const byHandle = new Map<unknown, { objectId: string; timer: ScopedTimer }>();
let installed = false;

/** Real time, epoch milliseconds, whatever scope the caller is in (the test clock's base). */
export function realNow(): number {
  return realDateNow();
}

/**
 * Runs `fn` with `now` as its clock: `Date.now()`, `new Date()`, `setTimeout` and `scheduler.wait`
 * in everything it starts follow `now`.
 */
export function onTestClock<T>(ctx: DurableObjectState, now: () => number, fn: () => T): T {
  install();
  const storage = ctx.storage;
  const here = (): boolean => {
    try {
      // Another object's storage refuses this read: its code keeps real time.
      storage.sql.exec("SELECT 1");
      return true;
    } catch {
      return false;
    }
  };
  return scope.run({ objectId: ctx.id.toString(), now, here }, fn);
}

/** The test clock the running code is on (to hand to code that runs later), or undefined. */
export function captureClock(): ClockScope | undefined {
  return scope.getStore();
}

/**
 * Runs `fn` on `clock` (captured with {@link captureClock}), or on real time when it is undefined:
 * the engine's own work runs off the test clock, the user's step bodies back on it.
 */
export function withClock<T>(clock: ClockScope | undefined, fn: () => T): T {
  return scope.run(clock as ClockScope, fn);
}

/** The scope of the running code, when it runs in the object the scope belongs to. */
function current(): ClockScope | undefined {
  const clock = scope.getStore();
  return clock?.here() ? clock : undefined;
}

/** Fires the timers the object's code set on its test clock that are due at `now` (in due order). */
export function clockMoved(objectId: string, now: number): number {
  const set = timers.get(objectId);
  if (set === undefined) return 0;
  const due = [...set].filter((t) => t.due <= now).sort((a, b) => a.due - b.due);
  for (const timer of due) {
    forget(objectId, timer);
    realClearTimeout(timer.real);
    timer.fire();
  }
  return due.length;
}

/** The earliest timer the object's code awaits on its test clock, or null. */
export function nextTimerAt(objectId: string): number | null {
  let at: number | null = null;
  for (const timer of timers.get(objectId) ?? [])
    at = at === null ? timer.due : Math.min(at, timer.due);
  return at;
}

/** Forgets an object's timers: a reset ended the code that awaited them. */
export function clearTimers(): void {
  for (const set of timers.values()) for (const timer of set) realClearTimeout(timer.real);
  timers.clear();
  byHandle.clear();
}

function forget(objectId: string, timer: ScopedTimer): void {
  const set = timers.get(objectId);
  set?.delete(timer);
  if (set?.size === 0) timers.delete(objectId);
  byHandle.delete(timer.real);
}

function scopedSetTimeout(
  callback: (...args: unknown[]) => void,
  ms?: number,
  ...args: unknown[]
): ReturnType<typeof setTimeout> {
  const clock = current();
  if (clock === undefined || typeof callback !== "function") {
    return (realSetTimeout as (...a: unknown[]) => ReturnType<typeof setTimeout>)(
      callback,
      ms,
      ...args,
    );
  }
  const delay = Math.max(0, Number(ms) || 0);
  const { objectId } = clock;
  const timer: ScopedTimer = {
    due: clock.now() + delay,
    real: undefined as unknown as ReturnType<typeof setTimeout>,
    // The callback runs in the scope it was set in, as a real timer's would.
    fire: () => scope.run(clock, () => callback(...args)),
  };
  timer.real = realSetTimeout(() => {
    forget(objectId, timer);
    timer.fire();
  }, delay);
  const set = timers.get(objectId) ?? new Set<ScopedTimer>();
  timers.set(objectId, set);
  set.add(timer);
  byHandle.set(timer.real, { objectId, timer });
  return timer.real;
}

function scopedClearTimeout(handle?: ReturnType<typeof setTimeout>): void {
  const found = byHandle.get(handle);
  if (found !== undefined) forget(found.objectId, found.timer);
  realClearTimeout(handle);
}

/** Patches the isolate's clock and timers once; outside a scope they behave as before. */
function install(): void {
  if (installed) return;
  installed = true;
  RealDate.now = () => current()?.now() ?? realDateNow();
  // `new Date()` with no argument reads the scope's clock; everything else is the real Date
  // (same prototype, so `instanceof Date` holds for dates made anywhere).
  globalThis.Date = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      const clock = current();
      return Reflect.construct(
        target,
        args.length === 0 && clock ? [clock.now()] : args,
        newTarget,
      );
    },
  });
  globalThis.setTimeout = scopedSetTimeout as typeof setTimeout;
  globalThis.clearTimeout = scopedClearTimeout as typeof clearTimeout;
  const sched = (
    globalThis as { scheduler?: { wait?: (ms: number, o?: unknown) => Promise<void> } }
  ).scheduler;
  const realWait = sched?.wait?.bind(sched);
  if (sched !== undefined && realWait !== undefined) {
    sched.wait = (ms: number, options?: unknown) =>
      current() === undefined
        ? realWait(ms, options)
        : new Promise<void>((resolve) => scopedSetTimeout(() => resolve(), ms));
  }
}
