import { ComposeError } from "./errors";
import { createEmitter } from "./events";
import { createOptionChecks } from "./options";
import { type AlarmPart, isAlarmPart } from "./part";
import { AlarmSlot } from "./wake";

/** Events {@link Alarms} emits. */
export type AlarmsEvent =
  | {
      type: "alarm:part-failed";
      /** Index of the failing part in `parts`. */
      part: number;
      error: unknown;
      /** Consecutive failed alarms of this part, 1 for the first. */
      failures: number;
      /** When the part's alarm is tried again (epoch ms). */
      retryAt: number;
    }
  | {
      /**
       * The object's alarm came and went (or was due) without reaching this `Alarms` while a part's
       * wake was overdue: the object's `alarm()` does not delegate. `error` names the fix.
       */
      type: "alarm:not-delegated";
      /** When the wake that was missed was due (epoch ms). */
      dueAt: number;
      error: ComposeError;
    }
  | {
      type: "alarm:armed";
      /** The time the alarm is armed at after the run, or `null` when no part needs a wake. */
      at: number | null;
    };

/** Options of {@link Alarms}. */
export interface AlarmsOptions {
  /** The parts sharing the object's alarm, e.g. `[this.tasks, this.streams]`. */
  parts: readonly AlarmPart[];
  /** Delay before a part whose `alarm()` threw is tried again; doubles per consecutive failure. Default 1000. */
  retryDelayMs?: number;
  /** Longest retry delay. Default 300000 (5 minutes). */
  maxRetryDelayMs?: number;
  /**
   * Longest a part's `alarm()` may take before the others' wakes are armed without it: past it the
   * part is reported failed (`compose/part-timeout`) and backs off, and `alarm()` returns. A part
   * whose call outlived the bound is not started again until that call settles (each turn until
   * then is reported failed the same way). Default 30000 (30 s).
   */
  partTimeoutMs?: number;
  /** Clock (epoch ms). Default `Date.now`. */
  now?: () => number;
  /** Receives {@link AlarmsEvent}s; a throwing listener is reported with `console.warn` and ignored. */
  onEvent?: (event: AlarmsEvent) => void;
}

const check = createOptionChecks(
  (message) => new ComposeError("compose/invalid-argument", message),
);

/**
 * One alarm, many parts, never pushed later. A host constructs it over its parts and calls
 * {@link Alarms.alarm} from its own `alarm()`:
 *
 * ```ts
 * readonly alarms = new Alarms(this.ctx, { parts: [this.tasks, this.streams] });
 * override alarm() { return this.alarms.alarm(); }
 * ```
 *
 * Between alarms, each part asks for earlier wakes itself through {@link requestWake} (earlier-only).
 * When the alarm fires, every part's `alarm()` runs (concurrently; one failing part neither stops nor
 * delays the others and is retried with back-off), then the alarm is armed at the earliest
 * `nextWakeAt()` of all parts, or deleted when none needs one.
 */
export class Alarms implements AlarmPart {
  readonly #slot: AlarmSlot;
  readonly #parts: readonly AlarmPart[];
  readonly #retryDelayMs: number;
  readonly #maxRetryDelayMs: number;
  readonly #partTimeoutMs: number;
  readonly #now: () => number;
  readonly #emit: (event: AlarmsEvent) => void;
  /** Without a listener, a failing part is logged with `console.error` so it is never silent. */
  readonly #listening: boolean;
  /** Per part: consecutive failures and when it is retried. */
  readonly #retries = new Map<number, { failures: number; at: number }>();
  /** Whether a missed alarm was reported in this instance (once is enough to name the fix). */
  #reportedUndelegated = false;
  /**
   * Parts whose `alarm()` outlived `partTimeoutMs` and has not settled yet, by index, with that
   * call's promise. Such a part is not started again until it settles; a part still running
   * within its bound (two alarms overlapping) is run again, as it always was.
   */
  readonly #hung = new Map<number, Promise<unknown>>();

  /**
   * @throws {ComposeError} `compose/invalid-argument` for a part without `alarm`/`nextWakeAt` or a bad delay.
   * @throws {ComposeError} `compose/conflict` when the object already has an `Alarms`: compose every part in one.
   */
  constructor(ctx: DurableObjectState, options: AlarmsOptions) {
    check.ctx(ctx, "new Alarms(ctx, { parts })");
    if (!Array.isArray(options?.parts)) {
      throw new ComposeError(
        "compose/invalid-argument",
        "Alarms takes { parts: [...] }: the parts sharing the alarm.",
      );
    }
    options.parts.forEach((part, index) => {
      if (!isAlarmPart(part)) {
        throw new ComposeError(
          "compose/invalid-argument",
          `parts[${index}] has no alarm() and nextWakeAt(); pass the part objects (e.g. this.tasks), constructed before the Alarms.`,
        );
      }
    });
    const retryDelayMs = check.ms(options.retryDelayMs, "retryDelayMs", 1000, { min: 1 });
    const maxRetryDelayMs = check.ms(options.maxRetryDelayMs, "maxRetryDelayMs", 300_000, {
      min: 1,
    });
    const partTimeoutMs = check.ms(options.partTimeoutMs, "partTimeoutMs", 30_000, { min: 1 });
    check.callback(options.now, "now");
    check.callback(options.onEvent, "onEvent");
    this.#slot = AlarmSlot.of(ctx.storage);
    this.#slot.claim(this, (dueAt) => this.#notDelegated(dueAt));
    this.#parts = [...options.parts];
    this.#retryDelayMs = retryDelayMs;
    this.#maxRetryDelayMs = maxRetryDelayMs;
    this.#partTimeoutMs = partTimeoutMs;
    this.#now = options.now ?? Date.now;
    this.#emit = createEmitter("@durablekit/compose", options.onEvent);
    this.#listening = options.onEvent !== undefined;
  }

  /** Reports (once per instance) an alarm that never reached this `Alarms`. */
  #notDelegated(dueAt: number): void {
    if (this.#reportedUndelegated) return;
    this.#reportedUndelegated = true;
    const error = new ComposeError(
      "compose/not-delegated",
      `This object's alarm, due at ${new Date(dueAt).toISOString()}, never reached its Alarms: the parts' wakes (sleeps, retries, recovery) are not run. The object's alarm() must delegate: override alarm() { return this.alarms.alarm(); }`,
    );
    this.#emit({ type: "alarm:not-delegated", dueAt, error });
    console.warn(`@durablekit/compose: ${error.message}`);
  }

  /**
   * Runs every due part's `alarm()`, then arms the alarm at the earliest wake any part needs. Never
   * throws for a failing part: the failure is emitted as `alarm:part-failed` and the part is tried
   * again after a back-off. A part backing off is not run before its retry time (even when another
   * part's wake fires the alarm earlier); a part whose `alarm()` outlives `partTimeoutMs` is
   * reported failed and left to settle on its own, so it never holds back the others' wakes.
   */
  async alarm(): Promise<void> {
    this.#slot.fired();
    const started = this.#now();
    const results = await Promise.all(
      this.#parts.map((part, index) => this.#turn(part, index, started)),
    );
    const now = this.#now();
    results.forEach((result, index) => {
      if (result === "skipped") return;
      if (result === "ok") {
        this.#retries.delete(index);
        return;
      }
      const failures = (this.#retries.get(index)?.failures ?? 0) + 1;
      const delay = Math.min(this.#retryDelayMs * 2 ** (failures - 1), this.#maxRetryDelayMs);
      const retryAt = now + delay;
      this.#retries.set(index, { failures, at: retryAt });
      this.#emit({
        type: "alarm:part-failed",
        part: index,
        error: result.error,
        failures,
        retryAt,
      });
      if (!this.#listening)
        console.error("@durablekit/compose: a part's alarm() failed", result.error);
    });
    await this.rearm();
  }

  /** One part's turn of an alarm: skipped while it backs off, bounded by `partTimeoutMs`. */
  async #turn(
    part: AlarmPart,
    index: number,
    now: number,
  ): Promise<"ok" | "skipped" | { error: unknown }> {
    const retry = this.#retries.get(index);
    if (retry !== undefined && retry.at > now) return "skipped";
    if (this.#hung.has(index)) {
      return { error: this.#timeout(index, "is still running from an earlier alarm") };
    }
    const run = (async () => part.alarm())().then(
      () => "ok" as const,
      (error: unknown) => ({ error }),
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<{ error: unknown }>((resolve) => {
      timer = setTimeout(() => {
        // Hung: not started again until this call settles, whenever that is.
        this.#hung.set(index, run);
        void run.finally(() => {
          if (this.#hung.get(index) === run) this.#hung.delete(index);
        });
        resolve({ error: this.#timeout(index, `did not settle within ${this.#partTimeoutMs} ms`) });
      }, this.#partTimeoutMs);
    });
    try {
      return await Promise.race([run, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  #timeout(index: number, what: string): ComposeError {
    return new ComposeError(
      "compose/part-timeout",
      `parts[${index}].alarm() ${what}; the other parts' wakes were armed without it, and it is tried again after its back-off. A part's alarm() must return once its due work is started.`,
    );
  }

  /**
   * The earliest wake of all parts, or `null`. A part backing off after a failure wakes at its
   * retry time, not before, however overdue its own work is.
   */
  nextWakeAt(): number | null {
    let earliest: number | null = null;
    this.#parts.forEach((part, index) => {
      const retry = this.#retries.get(index);
      const at = retry !== undefined ? retry.at : part.nextWakeAt();
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    });
    return earliest;
  }

  /**
   * Arms the alarm at exactly {@link nextWakeAt} (or deletes it). {@link alarm} does this itself;
   * call it only after removing work behind the parts' backs (e.g. dropping their tables).
   */
  async rearm(): Promise<void> {
    let armed: number | null = null;
    await this.#slot.armExactly(() => {
      armed = this.nextWakeAt();
      return armed;
    });
    this.#emit({ type: "alarm:armed", at: armed });
  }
}
