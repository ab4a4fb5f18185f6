import {
  promiseRejected,
  ReflectApply,
  SafeMap,
  SafeNumber,
  SafePromise,
  SafeWeakMap,
} from "../shared/primordials";
import type { Delivery, DeliveryOrder, RealTimers, TimerPort } from "./delivery-order";
import { replaceProperty } from "./replace-property";
import type { VirtualClock } from "./virtual-clock";

/** One virtual timer: a timeout, an interval or an immediate. */
interface Timer {
  /** Its number: 1, 2, … in creation order; its firings are logged as `-k`. */
  k: number;
  /** Virtual epoch ms of its next firing. */
  due: number;
  /** Its delay (and an interval's period), ms. */
  ms: number;
  /** True for an interval. */
  every: boolean;
  callback: (...args: unknown[]) => void;
  args: unknown[];
  /** Live: the real timer that will hand its firing to the delivery order, or null. */
  real: unknown;
}

type Callback = (...args: unknown[]) => void;

function delayOf(ms: unknown): number {
  const n = SafeNumber(ms);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

function callbackOf(callback: unknown, what: string): Callback {
  if (typeof callback !== "function") {
    throw new TypeError(`${what} takes a function (code strings are not evaluated).`);
  }
  return callback as Callback;
}

/**
 * The timers of a replay run's program: `setTimeout`, `setInterval`, `setImmediate` (when the
 * platform has it), their `clear…`, `scheduler.wait` and `AbortSignal.timeout`, all built on one
 * kind of virtual timer, numbered 1, 2, … in creation order. A timer is due `ms` after the virtual
 * clock's time when it was set. Live, a real timer of the time left hands its firing to the
 * delivery order; in replay, it fires when the schedule reaches its `-k`, with no real wait. When
 * it fires the clock advances to its due time. What a callback throws goes to `onError` (the
 * runner's `timer-error` outcome), as for real timers.
 */
export class VirtualTimers implements TimerPort {
  // ── State ──────────────────────────────────────────────────────────────────

  readonly #clock: VirtualClock;
  readonly #order: DeliveryOrder;
  readonly #real: RealTimers;
  readonly #onError: (error: unknown) => void;
  /** Timers set and neither cleared nor done firing, by number. */
  readonly #pending = new SafeMap<number, Timer>();
  #next = 1;
  /**
   * Whether `setTimeout` answers a Node-style timer object (with `nodejs_compat`) rather than a
   * number, as the platform's own does; decided once at install.
   */
  #nodeStyle = false;
  /** The Node-style objects handed out, to the timer number each stands for. */
  readonly #handles = new SafeWeakMap<object, number>();

  constructor(
    clock: VirtualClock,
    order: DeliveryOrder,
    real: RealTimers,
    onError: (error: unknown) => void,
  ) {
    this.#clock = clock;
    this.#order = order;
    this.#real = real;
    this.#onError = onError;
    order.useTimers(this);
  }

  // ── Program API ────────────────────────────────────────────────────────────

  /** Sets a timer due `ms` from the clock's time; answers its number. */
  set(callback: Callback, ms: number, args: unknown[], every: boolean): number {
    const k = this.#next++;
    const timer: Timer = {
      k,
      due: this.#clock.now + ms,
      ms,
      every,
      callback,
      args,
      real: null,
    };
    this.#pending.set(k, timer);
    this.#schedule(timer);
    return k;
  }

  /** What the program's `setTimeout` answers for timer `k`: its number, or a Node-style object. */
  #idOf(k: number): unknown {
    if (!this.#nodeStyle) return k;
    const timers = this;
    const handle = {
      ref() {
        return handle;
      },
      unref() {
        return handle;
      },
      hasRef: () => true,
      refresh() {
        timers.refresh(k);
        return handle;
      },
      close() {
        timers.clear(k);
        return handle;
      },
      [Symbol.toPrimitive]: () => k,
    };
    this.#handles.set(handle, k);
    return handle;
  }

  /** Restarts pending timer `k`: due its delay from the clock's time again (Node's `refresh`). */
  refresh(k: number): void {
    const timer = this.#pending.get(k);
    if (timer === undefined) return;
    if (timer.real !== null) this.#real.clearTimeout(timer.real);
    timer.real = null;
    this.#order.drop(-k);
    timer.due = this.#clock.now + timer.ms;
    this.#schedule(timer);
  }

  /** Clears the timer `id` stands for (any other value is ignored, as the platform does). */
  clear(id: unknown): void {
    const k =
      typeof id === "number"
        ? id
        : typeof id === "object" && id !== null
          ? this.#handles.get(id)
          : undefined;
    if (k === undefined) return;
    const timer = this.#pending.get(k);
    if (timer === undefined) return;
    this.#pending.delete(k);
    if (timer.real !== null) this.#real.clearTimeout(timer.real);
    timer.real = null;
    this.#order.drop(-k);
  }

  // ── Firing ─────────────────────────────────────────────────────────────────

  /** Replay: the order picks it up when the schedule reaches it. Live: a real timer of the time left. */
  #schedule(timer: Timer): void {
    if (this.#order.replaying) {
      this.#order.wake();
      return;
    }
    this.#arm(timer);
  }

  /**
   * Live: a real timer for the time `timer` has left: its delay when it is set now, or, for a timer
   * set during a replay (`goLive`), until its due time by the platform's clock, so a timer set before
   * a restart fires when it was due rather than its whole delay after the replay caught up.
   */
  #arm(timer: Timer, now = this.#clock.now): void {
    const left = Math.max(0, timer.due - now);
    timer.real = this.#real.setTimeout(() => {
      timer.real = null;
      if (this.#pending.get(timer.k) === timer) this.#order.enqueue(this.#firing(timer));
    }, left);
  }

  #firing(timer: Timer): Delivery {
    return { event: -timer.k, at: timer.due, run: () => this.#fire(timer) };
  }

  #fire(timer: Timer): void {
    if (this.#pending.get(timer.k) !== timer) return;
    if (!timer.every) {
      this.#pending.delete(timer.k);
    } else {
      timer.due = this.#clock.now + timer.ms;
      this.#schedule(timer);
    }
    try {
      ReflectApply(timer.callback, undefined, timer.args);
    } catch (error) {
      this.#onError(error);
    }
  }

  take(k: number): Delivery | null {
    const timer = this.#pending.get(k);
    return timer === undefined ? null : this.#firing(timer);
  }

  goLive(): void {
    const now = this.#clock.wallNow();
    this.#pending.forEach((timer) => {
      if (timer.real === null) this.#arm(timer, now);
    });
  }

  // ── Globals ────────────────────────────────────────────────────────────────

  /**
   * Replaces the isolate's timer functions with virtual ones: `setTimeout`/`setInterval` answer
   * the timer's number, which `clearTimeout`/`clearInterval` take; `scheduler.wait(ms, { signal })`
   * and `AbortSignal.timeout(ms)` are virtual timers too.
   */
  install(global: typeof globalThis): void {
    const g = global as unknown as Record<string, unknown>;
    const probe = this.#real.setTimeout(() => {}, 0);
    this.#real.clearTimeout(probe);
    this.#nodeStyle = typeof probe === "object" && probe !== null;
    replaceProperty(g, "setTimeout", (callback: unknown, ms?: unknown, ...args: unknown[]) =>
      this.#idOf(this.set(callbackOf(callback, "setTimeout"), delayOf(ms), args, false)),
    );
    replaceProperty(g, "setInterval", (callback: unknown, ms?: unknown, ...args: unknown[]) =>
      this.#idOf(this.set(callbackOf(callback, "setInterval"), delayOf(ms), args, true)),
    );
    const clear = (k?: unknown): void => this.clear(k);
    replaceProperty(g, "clearTimeout", clear);
    replaceProperty(g, "clearInterval", clear);
    if (typeof g.setImmediate === "function") {
      replaceProperty(g, "setImmediate", (callback: unknown, ...args: unknown[]) =>
        this.#idOf(this.set(callbackOf(callback, "setImmediate"), 0, args, false)),
      );
      replaceProperty(g, "clearImmediate", clear);
    }
    const scheduler = g.scheduler as object | undefined;
    if (typeof scheduler === "object" && scheduler !== null) {
      replaceProperty(scheduler, "wait", (ms?: unknown, options?: { signal?: AbortSignal }) =>
        this.#wait(delayOf(ms), options?.signal),
      );
    }
    replaceProperty(AbortSignal, "timeout", (ms: unknown) => {
      const controller = new AbortController();
      this.set(
        () =>
          controller.abort(
            new DOMException("The operation was aborted due to timeout", "TimeoutError"),
          ),
        delayOf(ms),
        [],
        false,
      );
      return controller.signal;
    });
  }

  /** `scheduler.wait`: resolves when a virtual timer fires; rejects with the signal's reason on abort. */
  #wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return promiseRejected(signal.reason);
    return new SafePromise((resolve, reject) => {
      const onAbort = (): void => {
        this.clear(k);
        reject(signal?.reason);
      };
      const k = this.set(
        () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        ms,
        [],
        false,
      );
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
