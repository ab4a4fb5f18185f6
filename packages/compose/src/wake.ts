import { ComposeError } from "./errors";

/** What is said when the object's class has no `alarm()` handler. */
const NO_HANDLER =
  "this Durable Object class has no alarm() handler, so no part can be woken (a task's sleep, retry or recovery, a stream's expiry, a program's recovery). Compose the parts in one Alarms and delegate to it: override alarm() { return this.alarms.alarm(); }";

/**
 * What this isolate knows of one object's alarm. Every alarm read and write of durablekit goes
 * through {@link AlarmSlot}, one at a time, so a later decision never loses to an earlier one.
 */
export class AlarmSlot {
  static readonly #slots = new WeakMap<DurableObjectStorage, AlarmSlot>();

  /** The slot of an object's storage (one per storage, created on first use). */
  static of(storage: DurableObjectStorage): AlarmSlot {
    let slot = AlarmSlot.#slots.get(storage);
    if (slot === undefined) {
      slot = new AlarmSlot(storage);
      AlarmSlot.#slots.set(storage, slot);
    }
    return slot;
  }

  readonly #storage: DurableObjectStorage;
  /** The one `Alarms` that drives this object's alarm, once constructed. */
  #owner: object | null = null;
  /** Told when an alarm this slot armed came and went without reaching the owner. */
  #undelegated: ((dueAt: number) => void) | null = null;
  /** Whether the missing `alarm()` handler was reported for this object (once per instance). */
  #reportedNoHandler = false;
  /** The last time this slot armed the alarm at, until the owner's `alarm()` runs. */
  #armedByUs: number | null = null;
  /** The armed time as last read or written here; `undefined` when not known (a new instance). */
  #armed: number | null | undefined;
  #queue: Promise<void> = Promise.resolve();
  #pending = 0;

  private constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
  }

  /**
   * Records `owner` as the one `Alarms` of this object. A second one would arm the alarm at its own
   * parts' earliest wake and so push the first one's wakes later.
   * @throws {ComposeError} `compose/conflict` when another owner holds the slot.
   */
  claim(owner: object, undelegated?: (dueAt: number) => void): void {
    if (this.#owner !== null && this.#owner !== owner) {
      throw new ComposeError(
        "compose/conflict",
        "This object already has an Alarms: a second one would push the first one's wakes later. Compose every part in one Alarms (new Alarms(ctx, { parts: [this.tasks, this.streams, …] })).",
      );
    }
    this.#owner = owner;
    this.#undelegated = undelegated ?? null;
  }

  /**
   * Arms the alarm at `at` unless it is already armed at or before `at`: earlier-only, so one
   * part's request never pushes another's wake later.
   */
  wakeBy(at: number): Promise<void> {
    // Fast path, no storage call: nothing queued and a known alarm still in the future at or
    // before `at`. An armed time in the past may have fired already, so it is read again.
    const armed = this.#armed;
    if (this.#pending === 0 && typeof armed === "number" && armed <= at && armed > Date.now()) {
      return Promise.resolve();
    }
    return this.#enqueue(async () => {
      let current = this.#armed;
      if (current === undefined || (current !== null && current <= Date.now())) {
        current = await this.#storage.getAlarm();
        // An alarm armed here is gone and the owner's alarm() never ran: the object's alarm()
        // handler does not delegate to its Alarms.
        const armed = this.#armedByUs;
        if (current === null && armed !== null && armed <= Date.now()) {
          this.#armedByUs = null;
          this.#undelegated?.(armed);
        }
      }
      if (current === null || at < current) {
        await this.#setAlarm(at);
        this.#armed = at;
        this.#armedByUs = at;
      } else {
        this.#armed = current;
      }
    });
  }

  /** Arms the alarm at exactly `at`, or deletes it for `null`. Only {@link Alarms} does this, after every part has said when it next needs a wake. */
  armExactly(at: () => number | null): Promise<void> {
    return this.#enqueue(async () => {
      const next = at();
      if (next === this.#armed) return;
      if (next === null) await this.#storage.deleteAlarm();
      else await this.#storage.setAlarm(next);
      this.#armed = next;
      this.#armedByUs = next;
    });
  }

  /**
   * Arms the alarm. A class with no `alarm()` handler cannot have one: that is reported once per
   * instance with the fix (every part asks for its wakes here, so each is covered), and the
   * failure is a `compose/not-delegated` error.
   */
  async #setAlarm(at: number): Promise<void> {
    try {
      await this.#storage.setAlarm(at);
    } catch (error) {
      if (!(error instanceof Error) || !/alarm\(\) handler/.test(error.message)) throw error;
      if (!this.#reportedNoHandler) {
        this.#reportedNoHandler = true;
        console.warn(`@durablekit/compose: ${NO_HANDLER}`, error);
      }
      throw new ComposeError("compose/not-delegated", NO_HANDLER, { cause: error });
    }
  }

  /** The alarm fired: it is no longer armed (the platform cleared it before calling the handler). */
  fired(): void {
    this.#armedByUs = null;
    void this.#enqueue(async () => {
      this.#armed = null;
    });
  }

  #enqueue(step: () => Promise<void>): Promise<void> {
    this.#pending += 1;
    const run = this.#queue.then(step).finally(() => {
      this.#pending -= 1;
    });
    // A failed step leaves the knowledge unknown and never blocks the steps after it.
    this.#queue = run.catch(() => {
      this.#armed = undefined;
    });
    return run;
  }
}

/**
 * Asks for a wake of the object no later than `at` (epoch ms): arms the Durable Object's alarm at
 * `at` when it is unset or later, and leaves it alone otherwise. This is how every durablekit part
 * asks for an earlier wake between alarms, through the `ctx` it was constructed with; hosts never
 * write an `armAlarm` callback.
 *
 * Alarm reads and writes made through this function and {@link Alarms} run one at a time per
 * object. The returned promise settles once the alarm is armed; a part on a synchronous path may
 * leave it floating (the write is ordered before the object's next output by the runtime).
 *
 * @throws {ComposeError} `compose/invalid-argument` when `at` is not a finite number.
 */
export function requestWake(ctx: DurableObjectState, at: number): Promise<void> {
  if (typeof at !== "number" || !Number.isFinite(at)) {
    throw new ComposeError(
      "compose/invalid-argument",
      `A wake time must be a finite number of epoch milliseconds; got ${String(at)}.`,
    );
  }
  return AlarmSlot.of(ctx.storage).wakeBy(at);
}
