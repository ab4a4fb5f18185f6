import { BridgeError } from "../errors";
import type { EventWindow } from "../shared/wire";

function malformed(what: string): BridgeError {
  return new BridgeError(
    "bridge/diverged",
    `The journal's event log is malformed (${what}); the run cannot be replayed. Start a new execution.`,
  );
}

/**
 * The event order a replay re-imposes on the isolate, from the event windows stored with the
 * recorded journal entries (see `EventWindow`): each window's `list` placed at offsets `from`,
 * `from + 1`, …; where windows overlap they must agree. Returns the gap-free prefix starting at
 * offset 0 (events after a gap were seen by the isolate after a call that was never recorded, so
 * nothing the host kept depends on them). Windows are read as untrusted data: a window that is not
 * `{ from: non-negative integer, list: non-zero integers }` is refused, and memory stays
 * proportional to the events given, whatever the offsets.
 * @throws BridgeError `bridge/diverged` when two windows disagree about an offset, or a
 * window is malformed.
 */
export function buildSchedule(windows: ReadonlyArray<EventWindow>): number[] {
  const log = new Map<number, number>();
  for (const window of windows) {
    const from = (window as Partial<EventWindow> | null)?.from;
    const list = (window as Partial<EventWindow> | null)?.list;
    if (!Number.isSafeInteger(from) || (from as number) < 0 || !Array.isArray(list)) {
      throw malformed("a window is not { from, list }");
    }
    for (let i = 0; i < list.length; i++) {
      const at = (from as number) + i;
      const event: unknown = list[i];
      if (!Number.isSafeInteger(event) || event === 0) {
        throw malformed(`position ${at} holds ${String(event)}, not a non-zero integer`);
      }
      const known = log.get(at);
      if (known !== undefined && known !== event) {
        throw new BridgeError(
          "bridge/diverged",
          `The journal's event log disagrees with itself at position ${at} (${known} and ${event as number}); the run cannot be replayed. Start a new execution.`,
        );
      }
      log.set(at, event as number);
    }
  }
  const schedule: number[] = [];
  for (let at = 0; ; at++) {
    const event = log.get(at);
    if (event === undefined) return schedule;
    schedule.push(event);
  }
}
