import { ComposeError } from "./errors";
import { createEmitter } from "./events";
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
  /** Clock (epoch ms). Default `Date.now`. */
  now?: () => number;
  /** Receives {@link AlarmsEvent}s; a throwing listener is reported with `console.warn` and ignored. */
  onEvent?: (event: AlarmsEvent) => void;
}

function checkDelay(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new ComposeError(
      "compose/invalid-argument",
      `${name} must be a positive integer of milliseconds; got ${String(value)}.`,
    );
  }
  return value;
}

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
  readonly #now: () => number;
  readonly #emit: (event: AlarmsEvent) => void;
  /** Without a listener, a failing part is logged with `console.error` so it is never silent. */
  readonly #listening: boolean;
  /** Per part: consecutive failures and when it is retried. */
  readonly #retries = new Map<number, { failures: number; at: number }>();

  /** @throws {ComposeError} `compose/invalid-argument` for a part without `alarm`/`nextWakeAt` or a bad delay. */
  constructor(ctx: DurableObjectState, options: AlarmsOptions) {
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
    this.#slot = AlarmSlot.of(ctx.storage);
    this.#parts = [...options.parts];
    this.#retryDelayMs = checkDelay("retryDelayMs", options.retryDelayMs, 1000);
    this.#maxRetryDelayMs = checkDelay("maxRetryDelayMs", options.maxRetryDelayMs, 300_000);
    this.#now = options.now ?? Date.now;
    this.#emit = createEmitter("@durablekit/compose", options.onEvent);
    this.#listening = options.onEvent !== undefined;
  }

  /**
   * Runs every part's `alarm()`, then arms the alarm at the earliest wake any part needs. Never
   * throws for a failing part: the failure is emitted as `alarm:part-failed` and the part is tried
   * again after a back-off.
   */
  async alarm(): Promise<void> {
    this.#slot.fired();
    const results = await Promise.allSettled(this.#parts.map(async (part) => part.alarm()));
    const now = this.#now();
    results.forEach((result, index) => {
      if (result.status === "fulfilled") {
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
        error: result.reason,
        failures,
        retryAt,
      });
      if (!this.#listening)
        console.error("@durablekit/compose: a part's alarm() failed", result.reason);
    });
    await this.rearm();
  }

  /** The earliest wake of all parts (and of parts waiting for a retry), or `null`. */
  nextWakeAt(): number | null {
    let earliest: number | null = null;
    for (const part of this.#parts) {
      const at = part.nextWakeAt();
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    }
    for (const { at } of this.#retries.values()) {
      if (earliest === null || at < earliest) earliest = at;
    }
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
