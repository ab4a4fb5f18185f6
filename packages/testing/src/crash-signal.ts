/**
 * Crashes the probe makes with `ctx.abort()`, by object id. A crash inside a synchronous journal
 * write cannot wait for the test to reset the object: the probe aborts the object at once, and
 * `abort()` also drops every write of the turn (the point of a crash "before" a write), so the fact
 * that the crash fired cannot go to SQLite. It goes here instead: the probe and the test's driver
 * run in one isolate under `@cloudflare/vitest-plugin`, and module state outlives object resets.
 */
const aborted = new Set<string>();
/** Objects an "after" crash will abort once its write is durable. */
const pending = new Set<string>();

/** Notes that the object `objectId` is being aborted by an armed crash. */
export function signalAbort(objectId: string): void {
  aborted.add(objectId);
}

/** Whether an armed crash aborted the object `objectId`. */
export function abortSignalled(objectId: string): boolean {
  return aborted.has(objectId);
}

/** Notes that an "after" crash will abort the object `objectId` once its write is durable. */
export function signalAbortPending(objectId: string): void {
  pending.add(objectId);
}

/**
 * Whether an "after" crash is waiting to abort the object `objectId`: until it does, the probe
 * holds every other durable write of the run (a step's result, another journal row).
 */
export function abortPending(objectId: string): boolean {
  return pending.has(objectId) && !aborted.has(objectId);
}
