import { ArrayIsArray, MathRound, ReflectApply, ReflectConstruct } from "../shared/primordials";
import { replaceProperty } from "./replace-property";

/**
 * The clock a replay run's program reads (`Date` with no arguments, `Date.now()`,
 * `performance.now()`): it starts at the execution's first start and moves only when the program
 * is handed an event, to the time the event was recorded (a journaled answer's `at`, a virtual
 * timer's due time). Between two events it stands still, so every attempt reads the same times at
 * the same points of the program.
 */
export class VirtualClock {
  // ── State ──────────────────────────────────────────────────────────────────

  /** Epoch ms of the execution's first start; `performance.now()` counts from here. */
  readonly startedAt: number;
  /** Epoch ms the program reads. Invariant: never decreases. */
  #now: number;
  /** The platform's own `Date.now`, kept before `install` replaces it. */
  readonly #platformNow = Date.now;

  constructor(startedAt: number) {
    this.startedAt = startedAt;
    this.#now = startedAt;
  }

  /** Epoch ms the program reads now. */
  get now(): number {
    return this.#now;
  }

  /**
   * The platform's time (epoch ms), for arming real timers only: the program never reads it. At
   * least the virtual time, which follows recorded host times and so lags it (while code runs, and
   * across a restart), never leads it.
   */
  wallNow(): number {
    return Math.max(this.#now, this.#platformNow());
  }

  /** Moves the clock to `at` when that is later; it never goes back. */
  advanceTo(at: number): void {
    if (at > this.#now) this.#now = at;
  }

  // ── Globals ────────────────────────────────────────────────────────────────

  /**
   * Makes the isolate's `Date` and `performance` read this clock. `Date` stays the same
   * constructor in every other respect (`instanceof`, `Date.parse`, `Date.UTC`, subclasses, a
   * date built from arguments); only "now" is virtual. `performance.timeOrigin` is `startedAt`.
   * `Intl.DateTimeFormat` formatting "now" and Node's `process.hrtime`/`uptime` read it too.
   */
  install(global: typeof globalThis): void {
    const RealDate = global.Date;
    const now = (): number => this.#now;
    const nowText = (): string => new RealDate(this.#now).toString();
    const VirtualDate: DateConstructor = new Proxy(RealDate, {
      construct: (target, args, newTarget) =>
        ReflectConstruct(
          target,
          args.length === 0 ? [this.#now] : args,
          newTarget === VirtualDate ? target : newTarget,
        ),
      // `Date()` called as a function answers the current time as a string.
      apply: nowText,
    });
    replaceProperty(RealDate, "now", now);
    replaceProperty(global, "Date", VirtualDate);
    replaceProperty(RealDate.prototype, "constructor", VirtualDate);

    this.#installIntl();
    this.#installProcess(global);
    const performance = (global as { performance?: Performance }).performance;
    if (performance !== undefined) {
      const elapsed = (): number => this.#now - this.startedAt;
      replaceProperty(performance, "now", elapsed);
      Object.defineProperty(performance, "timeOrigin", {
        get: () => this.startedAt,
        configurable: true,
      });
      const proto = Object.getPrototypeOf(performance) as object | null;
      if (proto !== null && typeof (proto as { now?: unknown }).now === "function") {
        replaceProperty(proto, "now", elapsed);
      }
    }
  }

  /** `Intl.DateTimeFormat`'s `format()` and `formatToParts()` with no date format the clock's time. */
  #installIntl(): void {
    const proto = Intl.DateTimeFormat.prototype;
    const format = Object.getOwnPropertyDescriptor(proto, "format")?.get;
    const formatToParts = proto.formatToParts;
    const clock = this;
    if (typeof format === "function") {
      Object.defineProperty(proto, "format", {
        configurable: true,
        get(this: Intl.DateTimeFormat) {
          const bound = ReflectApply(format, this, []) as (date?: Date | number) => string;
          return (date?: Date | number) => bound(date === undefined ? clock.#now : date);
        },
      });
    }
    replaceProperty(
      proto,
      "formatToParts",
      function (this: Intl.DateTimeFormat, date?: Date | number) {
        return ReflectApply(formatToParts, this, [date === undefined ? clock.#now : date]);
      },
    );
  }

  /** With `nodejs_compat`: `process.hrtime()`, `process.hrtime.bigint()` and `process.uptime()` count from `startedAt`. */
  #installProcess(global: typeof globalThis): void {
    const process = (global as unknown as { process?: Record<string, unknown> }).process;
    if (typeof process !== "object" || process === null) return;
    const nanos = (): bigint => BigInt(MathRound((this.#now - this.startedAt) * 1e6));
    if (typeof process.hrtime === "function") {
      const hrtime = (previous?: [number, number]): [number, number] => {
        let n = nanos();
        if (ArrayIsArray(previous)) n -= BigInt(previous[0]) * 1_000_000_000n + BigInt(previous[1]);
        return [Number(n / 1_000_000_000n), Number(n % 1_000_000_000n)];
      };
      hrtime.bigint = nanos;
      replaceProperty(process, "hrtime", hrtime);
    }
    if (typeof process.uptime === "function") {
      replaceProperty(process, "uptime", () => (this.#now - this.startedAt) / 1000);
    }
  }
}
