import type { Attempt } from "./attempt";
import { parkAgain, parkNew, stepFailed } from "./attempt-outcomes";
import { type Duration, parseDuration } from "./duration";
import { EventTimeoutError, StepTimeoutError, TasksError } from "./errors";
import type { InterruptedStep } from "./journal";
import { stepRow } from "./journal-writer";
import { validateName } from "./names";
import { resolvePolicy, type StepConfig, type StepPolicy } from "./policy";
import type { StepAttemptContext, TaskStep, WaitForEventOptions } from "./types";
import { decodeValue, rebuildError } from "./values";
import { Flight } from "./watchdog";

type StepFn<T> = (context: StepAttemptContext) => T | Promise<T>;

/**
 * The {@link TaskStep} of one attempt: replay semantics (journal hits, misses, retries, sleeps,
 * event waits, the live gate, duplicate and divergence checks). Durable transitions go through the
 * {@link Attempt}; a journal hit touches no SQL.
 */
export class ReplayStep implements TaskStep {
  readonly runId: string;
  readonly attempt: number;
  readonly interrupted: InterruptedStep | null;
  readonly #a: Attempt;

  constructor(attempt: Attempt, interrupted: InterruptedStep | null) {
    this.#a = attempt;
    this.runId = attempt.runId;
    this.attempt = attempt.number;
    this.interrupted = interrupted;
  }

  do<T>(name: string, fn: StepFn<T>): Promise<Awaited<T>>;
  do<T>(name: string, config: StepConfig, fn: StepFn<T>): Promise<Awaited<T>>;
  do<T>(
    name: string,
    configOrFn: StepConfig | StepFn<T>,
    maybeFn?: StepFn<T>,
  ): Promise<Awaited<T>> {
    // Synchronous up to the callback: a journal hit resolves without SQL and in one tick.
    try {
      const config = typeof configOrFn === "function" ? undefined : configOrFn;
      const fn = typeof configOrFn === "function" ? configOrFn : maybeFn;
      return this.#do(name, config, fn);
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  }

  #do<T>(
    name: string,
    config: StepConfig | undefined,
    fn: StepFn<T> | undefined,
  ): Promise<Awaited<T>> {
    const a = this.#a;
    if (typeof fn !== "function") {
      throw new TasksError("tasks/invalid-option", `step.do("${name}") needs a callback.`);
    }
    a.enter(name);
    // The hot path of a replay: a completed step, loaded packed, answered from memory.
    const done = a.journal.completedValue(name);
    if (done !== undefined) return Promise.resolve(decodeValue(done) as Awaited<T>);
    const row = a.journal.get(name);
    if (row) {
      a.expect(row, "do");
      if (row.state === "completed") return Promise.resolve(decodeValue(row.value) as Awaited<T>);
      if (row.state === "failed") throw rebuildError(row.value);
    }
    // Only a step that runs needs its policy: a journal hit stays as cheap as possible.
    const policy =
      config === undefined
        ? a.deps.defaults
        : resolvePolicy(a.deps.defaults, config.retries, config.timeout, `step "${name}"`);
    if (row) {
      a.goLive();
      if (row.state === "waiting" && row.wake_at !== null && Date.now() < row.wake_at) {
        throw parkAgain(a, "retry", row.wake_at);
      }
      // A retry that is due, or a step a dead attempt left running: the next attempt of it.
      const attempt = row.attempt + 1;
      if (!a.writer.markStarted(name, row.seq, attempt, true)) throw a.ended;
      return this.#execute(name, row.seq, attempt, policy, fn);
    }
    a.goLive();
    a.countNewStep();
    const seq = a.journal.takeSeq();
    // The step a dead attempt left in flight without a row of its own: this is its next attempt.
    const attempt = this.interrupted?.name === name ? this.interrupted.attempt + 1 : 1;
    if (!a.writer.markStarted(name, seq, attempt, false)) throw a.ended;
    return this.#execute(name, seq, attempt, policy, fn);
  }

  /**
   * Runs one attempt of a step callback against its deadline: a callback that ignores its signal
   * still loses at the timeout. A callback that returns synchronously completes without a tick.
   */
  #execute<T>(
    name: string,
    seq: number,
    attempt: number,
    policy: StepPolicy,
    fn: StepFn<T>,
  ): Promise<Awaited<T>> {
    const a = this.#a;
    const listening = a.deps.listening;
    const ref = { runId: a.runId, definition: a.definition, step: name, attempt };
    if (listening) a.emit({ type: "task:step:started", ...ref });
    const flight = new Flight(
      Date.now() + policy.timeoutMs,
      () => new StepTimeoutError(name, attempt, policy.timeoutMs),
    );
    const context: StepAttemptContext = {
      attempt,
      idempotencyKey: this.idempotencyKey(name),
      get signal() {
        return flight.signal;
      },
    };
    return new Promise<Awaited<T>>((resolve, reject) => {
      const settle = (ok: boolean, outcome: unknown): void => {
        if (flight.settled) return;
        flight.settled = true;
        a.watchdog.untrack(flight);
        try {
          if (!ok) {
            reject(stepFailed(a, name, seq, attempt, policy, outcome));
            return;
          }
          if (a.ended) {
            reject(a.ended);
            return;
          }
          let text: string;
          try {
            text = a.encode(outcome, `step "${name}" result`);
          } catch (error) {
            reject(stepFailed(a, name, seq, attempt, policy, error));
            return;
          }
          a.writer.hold(stepRow(name, seq, "do", { attempt, value: text }));
          if (listening) a.emit({ type: "task:step:completed", ...ref });
          // Live and replayed calls return the same thing: the value as the journal gives it back
          // (a primitive decodes to itself, so only objects pay for the round trip).
          const live =
            typeof outcome === "object" && outcome !== null ? decodeValue(text) : outcome;
          resolve(live as Awaited<T>);
        } catch (error) {
          reject(error);
        }
      };
      flight.onFail = (reason) => settle(false, reason);
      a.watchdog.track(flight);
      let result: unknown;
      try {
        result = fn(context);
      } catch (error) {
        settle(false, error);
        return;
      }
      if (
        result !== null &&
        typeof (result as PromiseLike<unknown> | undefined)?.then === "function"
      ) {
        (result as PromiseLike<unknown>).then(
          (value) => settle(true, value),
          (error: unknown) => settle(false, error),
        );
      } else {
        settle(true, result);
      }
    });
  }

  async sleep(name: string, duration: Duration): Promise<void> {
    const ms = parseDuration(duration, `sleep "${name}" duration`);
    return this.#sleep(name, () => Date.now() + ms);
  }

  async sleepUntil(name: string, when: number | Date): Promise<void> {
    const at = when instanceof Date ? when.getTime() : when;
    if (typeof at !== "number" || !Number.isFinite(at)) {
      throw new TasksError(
        "tasks/invalid-option",
        `sleepUntil("${name}") needs a Date or a finite epoch-milliseconds number.`,
      );
    }
    return this.#sleep(name, () => at);
  }

  /** The first recorded deadline wins: a replay before it parks again on the same deadline. */
  #sleep(name: string, deadline: () => number): void {
    const a = this.#a;
    a.enter(name);
    const row = a.journal.get(name);
    if (row) {
      a.expect(row, "sleep");
      if (row.state === "completed" || row.wake_at === null || Date.now() >= row.wake_at) return;
      a.goLive();
      throw parkAgain(a, "sleep", row.wake_at);
    }
    a.goLive();
    a.countNewStep();
    const seq = a.journal.takeSeq();
    const wakeAt = deadline();
    if (wakeAt <= Date.now()) {
      a.writer.hold(stepRow(name, seq, "sleep", { wake_at: wakeAt }));
      return;
    }
    throw parkNew(
      a,
      "sleep",
      wakeAt,
      stepRow(name, seq, "sleep", { state: "waiting", wake_at: wakeAt }),
    );
  }

  async waitForEvent<T = unknown>(name: string, options: WaitForEventOptions): Promise<T> {
    const a = this.#a;
    const type = options?.type;
    validateName(type, `waitForEvent("${name}") type`, false);
    const timeoutMs =
      options.timeout === undefined
        ? null
        : parseDuration(options.timeout, `waitForEvent "${name}" timeout`);
    a.enter(name);
    const row = a.journal.get(name);
    if (row) {
      a.expect(row, "event", type);
      if (row.state === "completed") return decodeValue(row.value) as T;
      if (row.state === "failed") throw rebuildError(row.value);
    } else {
      a.countNewStep();
    }
    a.goLive();
    const stepSeq = row ? row.seq : a.journal.takeSeq();
    // An event sent before this wait (or while the run was not parked on it) is in the buffer.
    const buffered = a.deps.store.events.peekEvent(a.runId, type);
    if (buffered) {
      a.consumeEvent(name, stepSeq, type, buffered.seq, buffered.payload);
      a.emit({
        type: "task:event:delivered",
        runId: a.runId,
        definition: a.definition,
        eventType: type,
      });
      return decodeValue(buffered.payload) as T;
    }
    if (row) {
      if (row.wake_at !== null && Date.now() >= row.wake_at) {
        throw a.failStep(name, stepSeq, "event", new EventTimeoutError(name, type), type);
      }
      throw parkAgain(a, "event", row.wake_at, name, type);
    }
    const wakeAt = timeoutMs === null ? null : Date.now() + timeoutMs;
    throw parkNew(
      a,
      "event",
      wakeAt,
      stepRow(name, stepSeq, "event", { state: "waiting", wake_at: wakeAt, event_type: type }),
      type,
    );
  }

  async status(message: string): Promise<void> {
    this.#a.writeStatus(String(message));
  }

  idempotencyKey(name: string): string {
    return `${this.runId}:${name}`;
  }
}
