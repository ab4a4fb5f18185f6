import type { CallState } from "./call-state";

/** What {@link Deadlines} calls when time is up. */
export interface DeadlineHandlers {
  /** The attempt passed its own deadline (`runTimeoutMs`). */
  runTimedOut(): void;
  /** A call in flight passed its deadline. */
  callTimedOut(call: CallState): void;
}

/**
 * The deadlines of one attempt: its own (`runTimeoutMs` from its start) and each call's (its start
 * plus `callTimeoutMs`, capped by the attempt's). Calls start in deadline order, since every call
 * gets the same timeout, so the oldest call in flight is always the next to expire and one timer
 * serves them all; once set it stays set until it fires, however many calls come and go, so a
 * call costs no timer of its own.
 */
export class Deadlines {
  /** Epoch ms when the attempt times out. */
  readonly run: number;
  readonly #callTimeoutMs: number;
  readonly #inflight: ReadonlySet<CallState>;
  readonly #handlers: DeadlineHandlers;
  #runTimer: ReturnType<typeof setTimeout> | undefined;
  #callTimer: ReturnType<typeof setTimeout> | undefined;
  #cleared = false;

  constructor(
    runTimeoutMs: number,
    callTimeoutMs: number,
    inflight: ReadonlySet<CallState>,
    handlers: DeadlineHandlers,
  ) {
    this.run = Date.now() + runTimeoutMs;
    this.#callTimeoutMs = callTimeoutMs;
    this.#inflight = inflight;
    this.#handlers = handlers;
    this.#runTimer = setTimeout(() => handlers.runTimedOut(), runTimeoutMs);
  }

  /** The deadline of a call that starts at `startedAt`. */
  forCall(startedAt: number): number {
    return Math.min(startedAt + this.#callTimeoutMs, this.run);
  }

  /** A call started: makes sure the timer watches the oldest call in flight. */
  watch(): void {
    if (this.#callTimer !== undefined || this.#cleared) return;
    const first = this.#inflight.values().next();
    if (first.done) return;
    this.#callTimer = setTimeout(
      () => this.#expire(),
      Math.max(0, first.value.deadline - Date.now()),
    );
  }

  #expire(): void {
    this.#callTimer = undefined;
    const now = Date.now();
    if (now >= this.run) {
      // The attempt's own deadline: it times out (and ends its calls) rather than each call.
      this.#handlers.runTimedOut();
      return;
    }
    for (const call of [...this.#inflight]) {
      if (call.deadline > now) break;
      this.#handlers.callTimedOut(call);
    }
    this.watch();
  }

  /** The attempt ended: no timer fires any more. */
  clear(): void {
    this.#cleared = true;
    clearTimeout(this.#runTimer);
    clearTimeout(this.#callTimer);
  }
}
