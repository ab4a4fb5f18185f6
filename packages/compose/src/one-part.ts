/** The parts each object's state has, by kind (`Streams`, `Tasks`, …), once constructed. */
const partsByState = new WeakMap<object, Set<string>>();

/** What {@link claimPart} needs to say about a part that is built twice. */
export interface ComposePartClaim {
  /** The part's class name, as users write it: `Streams`, `Tasks`, `Executor`, `ChatTurns`. */
  part: string;
  /** How the one part is constructed, for the message: `this.streams = new Streams(ctx)`. */
  construct: string;
  /** What a second one would break, for the message: `would not wake the first one's live readers`. */
  breaks: string;
  /** The package's `…/conflict` error with this message. */
  conflict: (message: string) => Error;
}

/**
 * Records that the object whose state is `ctx` has its one `claim.part`, and refuses a second.
 * Every durablekit part that keeps state in memory beside its tables (live readers, caches, the
 * attempts it runs) calls this in its constructor: two of them over one object would each see only
 * their own half, and that fails quietly (a reader that is never woken, a run claimed twice). A
 * part built per request, or once more for reads, is refused here instead, loudly, with the fix.
 *
 * The record is per state object, so a new instance of the object (a restart, an eviction) starts
 * with none.
 *
 * @throws what `claim.conflict` makes (the package's `…/conflict`) when the object already has one.
 */
export function claimPart(ctx: DurableObjectState, claim: ComposePartClaim): void {
  let parts = partsByState.get(ctx);
  if (parts === undefined) {
    parts = new Set();
    partsByState.set(ctx, parts);
  }
  if (parts.has(claim.part)) {
    const article = /^[AEIOU]/.test(claim.part) ? "an" : "a";
    throw claim.conflict(
      `This object already has ${article} ${claim.part}: construct parts once, in the constructor (${claim.construct}), and use that one for every request and call. A second one over the same object ${claim.breaks}.`,
    );
  }
  parts.add(claim.part);
}
