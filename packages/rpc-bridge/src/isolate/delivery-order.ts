import type { JournalErrorRecord } from "@durablekit/handle-journal";
import {
  ArrayPrototypePush,
  ArrayPrototypeShift,
  ArrayPrototypeSlice,
  ArrayPrototypeSplice,
  MathMin,
  promiseRejected,
  SafeMap,
  SafePromise,
  thenOf,
} from "../shared/primordials";
import { type Answer, type EventWindow, envelopeOf, TAG } from "../shared/wire";
import type { VirtualClock } from "./virtual-clock";

/**
 * How long (real ms) a replay may wait for its next scheduled event while nothing can bring it (no
 * call in flight to the host, the expected answer not held, the expected timer not pending) before
 * the attempt ends as diverged. Not a replay-affecting value: a program that repeats its recorded
 * order never waits on it.
 */
export const STALL_MS = 1000;

/** One event the program is handed: a journaled answer (`event` = its seq) or a timer firing (`-k`). */
export interface Delivery {
  event: number;
  /** Epoch ms the clock advances to when it is delivered. */
  at: number;
  run(): void;
}

/** What the delivery order asks of the virtual timers (a port: the timers own their state). */
export interface TimerPort {
  /** Replay: the firing of pending timer `k`, or null when timer `k` is not pending. Has no effect. */
  take(k: number): Delivery | null;
  /** The schedule is used up: pending timers start real timers for the time they have left. */
  goLive(): void;
}

/** The platform's timer functions, captured before the program's globals are replaced. */
export interface RealTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  /**
   * Runs `callback` in a later macrotask, as soon as the platform can (after every microtask
   * queued so far has run). A message to a private port: ~15 µs in workerd, where a zero-delay
   * timer takes ~1.1 ms.
   */
  nextTurn(callback: () => void): void;
}

function describe(event: number): string {
  return event > 0
    ? `the answer of journal entry ${event}`
    : `the firing of timer ${-event} (the ${-event}. timer the program created)`;
}

/**
 * The order in which a replay run's program is handed its events, and the log of that order.
 *
 * Every journaled answer and every virtual timer firing reaches the program through here, one per
 * macrotask (so the microtasks one delivery starts all run before the next delivery: two answers'
 * continuations never interleave differently on another attempt), and is appended to the event
 * log as it is delivered (`+seq`, `-k`). Each call sends the log window since the latest answered
 * call was issued ({@link call}); the host stores it with the call's journal entry, and on a later
 * attempt gives back the gap-free prefix of the log as the `schedule`.
 *
 * While the schedule lasts (replay), answers and due timers are held and released strictly in
 * schedule order; when the next scheduled event cannot happen, the attempt ends as diverged
 * ({@link diverged}). Once it is used up (or from the start on a first attempt: live), answers
 * are delivered in arrival order and timers fire by real time.
 */
export class DeliveryOrder {
  // ── State ──────────────────────────────────────────────────────────────────

  readonly #clock: VirtualClock;
  readonly #real: RealTimers;
  #timers: TimerPort | null = null;
  /** Every event delivered to the program, in the order it saw them. */
  readonly #log: number[] = [];
  /** The log index the latest answered call was issued at. Invariant: never decreases. */
  #acked = 0;
  /** Calls sent to the host and not yet answered. */
  #inflight = 0;
  readonly #schedule: readonly number[];
  /** Index of the next scheduled event. Invariant: `#replaying` iff `#cursor < #schedule.length`. */
  #cursor = 0;
  #replaying: boolean;
  /** Replay: journaled answers that arrived, by seq, in arrival order. */
  readonly #held = new SafeMap<number, Delivery>();
  /** Live: deliveries in arrival order. */
  readonly #queue: Delivery[] = [];
  /**
   * True from a delivery until the next macrotask starts: at most one delivery per macrotask. A
   * Workers RPC answer and a real timer each reach the isolate in a macrotask of their own (workerd
   * settles each from its event loop, after every queued microtask ran; the answers of one batch
   * reply are resolved one per macrotask by the `CallBatcher`), so their callbacks clear it; where no such macrotask comes (the next held event is ready at once) a turn is taken.
   */
  #busy = false;
  /** A turn is on its way; it clears `#busy`. */
  #turning = false;
  #stallTimer: unknown = null;
  #ended = false;

  /** Settles with the record of the divergence when the program does not repeat the schedule. */
  readonly diverged: Promise<JournalErrorRecord>;
  #diverge!: (record: JournalErrorRecord) => void;

  constructor(schedule: readonly number[], clock: VirtualClock, real: RealTimers) {
    this.#schedule = schedule;
    this.#replaying = schedule.length > 0;
    this.#clock = clock;
    this.#real = real;
    this.diverged = new SafePromise((resolve) => {
      this.#diverge = resolve;
    });
  }

  /** Connects the timers (built after the order, because they deliver through it). */
  useTimers(timers: TimerPort): void {
    this.#timers = timers;
  }

  /** True while the schedule is being re-imposed. */
  get replaying(): boolean {
    return this.#replaying;
  }

  // ── Calls ──────────────────────────────────────────────────────────────────

  /**
   * One call of the program: `send` it with the log window since the latest answered call, and
   * settle the program's promise with `settle(answer)` (which throws for an error answer) when the
   * answer is delivered: a journaled answer through the order (logged, clock advanced to its
   * `at`), any other answer (a refusal before keying, a halt) at once and unlogged.
   */
  call(
    send: (events: EventWindow) => Promise<Answer>,
    settle: (answer: Answer) => unknown,
  ): Promise<unknown> {
    const issuedAt = this.#log.length;
    const events: EventWindow = {
      from: this.#acked,
      list: ArrayPrototypeSlice(this.#log, this.#acked),
    };
    this.#inflight++;
    this.#disarmStall();
    let sent: Promise<Answer>;
    try {
      sent = send(events);
    } catch (error) {
      // Nothing was sent (e.g. arguments Workers RPC cannot serialize): no call is in flight, and
      // the stall watch resumes in a later turn, never inside the program's own call.
      this.#inflight--;
      this.#turn();
      return promiseRejected(error);
    }
    return new SafePromise((resolve, reject) => {
      const deliver = (answer: Answer): void => {
        try {
          resolve(settle(answer));
        } catch (error) {
          reject(error);
        }
      };
      thenOf(
        sent,
        (answer) => {
          this.#inflight--;
          this.#busy = false;
          const envelope = envelopeOf(answer);
          if (envelope === null || envelope[TAG] !== "journaled") {
            deliver(answer);
            this.#pump();
            return;
          }
          // The host stored this call's window before answering: the log up to `issuedAt` is known to it.
          if (issuedAt > this.#acked) this.#acked = issuedAt;
          const inner = envelope.answer;
          this.#arrive({ event: envelope.seq, at: envelope.at, run: () => deliver(inner) });
        },
        (error: unknown) => {
          this.#inflight--;
          reject(error);
          this.#pump();
        },
      );
    });
  }

  /**
   * One call of the program answered from an answer the isolate already holds (a prefetched
   * journal entry, event `event`): it is held at once and delivered as a host's journaled answer
   * would be (in schedule order, logged, the clock advanced to `at`), never in the macrotask that
   * made the call. Nothing is sent, so the point up to which the host knows the log moves only as
   * far as the recorded schedule (which the host built) reaches.
   */
  held(
    event: number,
    at: number,
    answer: Answer,
    settle: (answer: Answer) => unknown,
  ): Promise<unknown> {
    const known = MathMin(this.#log.length, this.#schedule.length);
    if (known > this.#acked) this.#acked = known;
    return new SafePromise((resolve, reject) => {
      const run = (): void => {
        try {
          resolve(settle(answer));
        } catch (error) {
          reject(error);
        }
      };
      // The call's macrotask is running the program: the answer waits for a later one.
      this.#busy = true;
      this.#arrive({ event, at, run });
      this.#turn();
    });
  }

  #arrive(delivery: Delivery): void {
    if (this.#ended) return;
    if (this.#replaying) this.#held.set(delivery.event, delivery);
    else ArrayPrototypePush(this.#queue, delivery);
    this.#pump();
  }

  // ── Timers ─────────────────────────────────────────────────────────────────

  /**
   * Replay: a timer was created or rescheduled; it may be the event the schedule waits for. Looked
   * at on the next macrotask, never inside the program's own `setTimeout` call.
   */
  wake(): void {
    if (this.#ended) return;
    this.#busy = true;
    this.#turn();
  }

  /** Live: a timer's real time has passed (called from the real timer's callback, a macrotask of its own). */
  enqueue(delivery: Delivery): void {
    this.#busy = false;
    this.#arrive(delivery);
  }

  /** A cleared timer's firing, queued but not yet delivered, is dropped. */
  drop(event: number): void {
    const queue = this.#queue;
    for (let at = 0; at < queue.length; at++) {
      if ((queue[at] as Delivery).event !== event) continue;
      ArrayPrototypeSplice(queue, at, 1);
      return;
    }
  }

  // ── Releasing ──────────────────────────────────────────────────────────────

  /** Delivers the next event when one may go now; otherwise watches for a stall. */
  #pump(): void {
    if (this.#busy || this.#ended) return;
    const next = this.#peek();
    if (next === null) {
      this.#watchStall();
      return;
    }
    this.#disarmStall();
    if (this.#replaying) {
      if (next.event > 0) this.#held.delete(next.event);
      this.#cursor++;
    } else {
      ArrayPrototypeShift(this.#queue);
    }
    this.#busy = true;
    this.#clock.advanceTo(next.at);
    ArrayPrototypePush(this.#log, next.event);
    next.run();
    if (this.#replaying && this.#cursor === this.#schedule.length) this.#goLive();
    // Another event already waits: it goes in a later macrotask, after this one's microtasks.
    if (this.#peek() !== null) this.#turn();
  }

  #turn(): void {
    if (this.#turning) return;
    this.#turning = true;
    this.#real.nextTurn(this.#tick);
  }

  /** The next macrotask: the previous delivery's microtasks have all run. */
  readonly #tick = (): void => {
    this.#turning = false;
    this.#busy = false;
    this.#pump();
  };

  /** The delivery that goes next, or null when it is not there yet; has no effect. */
  #peek(): Delivery | null {
    if (!this.#replaying) return this.#queue[0] ?? null;
    const event = this.#schedule[this.#cursor] as number;
    if (event > 0) return this.#held.get(event) ?? null;
    return this.#timers?.take(-event) ?? null;
  }

  /** The schedule is used up: held answers go in arrival order, timers by real time. */
  #goLive(): void {
    this.#replaying = false;
    this.#timers?.goLive();
    this.#held.forEach((delivery) => {
      ArrayPrototypePush(this.#queue, delivery);
    });
    this.#held.clear();
  }

  // ── Stalls ─────────────────────────────────────────────────────────────────

  #watchStall(): void {
    if (!this.#replaying || this.#inflight > 0) {
      this.#disarmStall();
      return;
    }
    if (this.#stallTimer === null)
      this.#stallTimer = this.#real.setTimeout(this.#stalled, STALL_MS);
  }

  #disarmStall(): void {
    if (this.#stallTimer === null) return;
    this.#real.clearTimeout(this.#stallTimer);
    this.#stallTimer = null;
  }

  readonly #stalled = (): void => {
    this.#stallTimer = null;
    if (this.#ended || !this.#replaying || this.#inflight > 0 || this.#peek() !== null) return;
    this.#diverge(this.#divergence("stopped before it"));
  };

  #divergence(what: string): JournalErrorRecord {
    const event = this.#schedule[this.#cursor] as number;
    return {
      $error: {
        name: "BridgeError",
        code: "bridge/diverged",
        retryable: false,
        message: `The program did not repeat its recorded run: it ${what} received ${describe(event)} (event ${this.#cursor + 1} of ${this.#schedule.length} recorded). A replayed program must make the same calls and create the same timers in the same order when given the same answers, times and random values.`,
      },
    };
  }

  /**
   * The program returned: the divergence when recorded events were left undelivered (the recorded
   * run saw them before its last recorded call), else null.
   */
  finish(): JournalErrorRecord | null {
    return this.#replaying ? this.#divergence("returned before it") : null;
  }

  /** The run has ended: nothing more is delivered, and no timer of the order stays armed. */
  end(): void {
    this.#ended = true;
    this.#disarmStall();
    this.#held.clear();
    this.#queue.length = 0;
  }
}
