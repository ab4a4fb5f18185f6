/**
 * One step callback in flight: its deadline, its abort signal (created only if the callback reads
 * it), and how to fail it from outside (timeout, cancel, end of the attempt).
 */
export class Flight {
  readonly deadline: number;
  readonly timeoutError: () => Error;
  /** True once the step's outcome is decided; later outcomes are ignored. */
  settled = false;
  /** Called by {@link Flight.fail}; the step wires it to its rejection path. */
  onFail: (reason: unknown) => void = () => {};
  #controller: AbortController | undefined;
  #failed: { reason: unknown } | undefined;

  constructor(deadline: number, timeoutError: () => Error) {
    this.deadline = deadline;
    this.timeoutError = timeoutError;
  }

  /** The signal the callback sees: aborted when the step times out or the run is cancelled. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#failed) this.#controller.abort(this.#failed.reason);
    }
    return this.#controller.signal;
  }

  /** Aborts the callback's signal and fails the step with `reason`, unless it already settled. */
  fail(reason: unknown): void {
    if (this.settled || this.#failed) return;
    this.#failed = { reason };
    this.#controller?.abort(reason);
    this.onFail(reason);
  }
}

/**
 * Fails in-flight steps at their deadlines with a single timer for all of them, re-armed only when a
 * step with an earlier deadline starts or when it fires. A timer per step would cost more than a
 * trivial step itself (tens of microseconds in workerd); sequential steps with the same timeout
 * share one timer per attempt.
 */
export class Watchdog {
  readonly #now: () => number;
  readonly #flights = new Set<Flight>();
  /** Waiters of {@link idle}. */
  #idle: Array<() => void> = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #at = Number.POSITIVE_INFINITY;

  /** @param now - the engine's clock; deadlines are on it. */
  constructor(now: () => number) {
    this.#now = now;
  }

  track(flight: Flight): void {
    this.#flights.add(flight);
    if (flight.deadline < this.#at) this.#arm(flight.deadline);
  }

  untrack(flight: Flight): void {
    this.#flights.delete(flight);
    if (this.#flights.size === 0) {
      const idle = this.#idle;
      this.#idle = [];
      for (const resolve of idle) resolve();
    }
  }

  /**
   * Resolves when no step is in flight (at once when none is): every callback returned, failed or
   * was failed at its deadline.
   */
  idle(): Promise<void> {
    if (this.#flights.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Fails every step in flight (a cancel, or the end of the attempt). */
  failAll(reason: unknown): void {
    for (const flight of [...this.#flights]) flight.fail(reason);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
  }

  #arm(at: number): void {
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, at - this.#now()));
  }

  #fire(): void {
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
    const now = this.#now();
    let next = Number.POSITIVE_INFINITY;
    for (const flight of [...this.#flights]) {
      if (flight.deadline <= now) flight.fail(flight.timeoutError());
      else if (flight.deadline < next) next = flight.deadline;
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
  }
}
