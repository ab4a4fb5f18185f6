/**
 * How an attempt ended before its handler returned. Thrown through the handler's `await`s so user
 * code unwinds; deliberately not an `Error`, so a `catch (e) { if (e instanceof Error) … }` around
 * unrelated work does not swallow it. Once an attempt has ended, every further step call throws
 * the same value again, so swallowing it cannot make the attempt write anything.
 *
 * - `parked`: the run is waiting (sleep, retry or event) and a later wake replays it;
 * - `paused`: the run is held for an operator (`pause`) and a `resume` replays it;
 * - `cancelled`: the run settled as cancelled;
 * - `settled`: the run settled some other way while the handler was still running;
 * - `superseded`: another attempt claimed the run; this one writes nothing more;
 * - `abandoned`: a platform failure (isolate reset, storage transient); the claim deadline replays it.
 */
export class AttemptEnded {
  constructor(
    readonly how:
      | "parked"
      | "paused"
      | "cancelled"
      | "settled"
      | "superseded"
      | "abandoned"
      /** Not an end: a cancel reached a boundary; the handler unwinds, the compensations run, then it settles. */
      | "stopping",
  ) {}
}

/** True when a thrown value is the end-of-attempt signal, not a failure of user code. */
export function isAttemptEnded(thrown: unknown): thrown is AttemptEnded {
  return thrown instanceof AttemptEnded;
}
