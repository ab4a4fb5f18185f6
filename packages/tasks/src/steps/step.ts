import { check, checkMs, checkName, checkOptions } from "../arguments";
import { Flight } from "../attempt/watchdog";
import type { ChildSteps, TaskChildSpec } from "../children/child-steps";
import { MAX_STARTED_CHILDREN } from "../children/protocol";
import {
  CHILDREN_EVENT,
  MAX_AWAITED_CHILDREN,
  type TaskChildOutcome,
  type TaskChildRun,
  type TaskChildTarget,
} from "../children/types";
import { EventTimeoutError, StepTimeoutError, TasksError } from "../errors";
import { resolvePolicy, type StepPolicy } from "../policy";
import {
  COMPENSATION_PREFIX,
  type TaskInterruptedStep,
  VERSION_MARKER_PREFIX,
} from "../store/rows";
import type {
  TaskAwaitChildrenOptions,
  TaskStep,
  TaskStepAttemptContext,
  TaskStepJournal,
  TaskStepOptions,
  TaskWaitForEventOptions,
} from "../types";
import { decodeValue } from "../values";
import type { Compensation } from "./compensation";
import { stepRow } from "./journal-writer";
import type { StepEngine } from "./step-engine";

type StepFn<T> = (context: TaskStepAttemptContext) => T | Promise<T>;

/**
 * The {@link TaskStep} of one attempt: replay semantics (journal hits, misses, retries, sleeps,
 * event waits, the live gate, duplicate and divergence checks). Every effect on the engine goes
 * through its {@link StepEngine} port; a journal hit touches no SQL.
 */
export class ReplayStep implements TaskStep {
  readonly runId: string;
  readonly attempt: number;
  readonly interrupted: TaskInterruptedStep | null;
  readonly #a: StepEngine;
  /** Step calls made so far: each `do`'s start order, which its compensation runs against. */
  #calls = 0;

  constructor(attempt: StepEngine, interrupted: TaskInterruptedStep | null) {
    this.#a = attempt;
    this.runId = attempt.runId;
    this.attempt = attempt.number;
    this.interrupted = interrupted;
  }

  do<T>(name: string, fn: StepFn<T>): Promise<Awaited<T>>;
  do<T>(name: string, config: TaskStepOptions, fn: StepFn<T>): Promise<Awaited<T>>;
  do<T>(
    name: string,
    configOrFn: TaskStepOptions | StepFn<T>,
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
    config: TaskStepOptions | undefined,
    fn: StepFn<T> | undefined,
    internal = false,
  ): Promise<Awaited<T>> {
    const a = this.#a;
    if (typeof fn !== "function") {
      throw new TasksError("tasks/invalid-argument", `step.do("${name}") needs a callback.`);
    }
    checkOptions(config, `step.do("${name}") options`);
    const compensate = config?.compensate;
    if (compensate !== undefined && typeof compensate !== "function") {
      throw new TasksError(
        "tasks/invalid-argument",
        `step.do("${name}") compensate must be a function (result, context) => …; got ${typeof compensate}.`,
      );
    }
    a.enter(name, internal);
    const order = this.#calls++;
    if (compensate !== undefined) a.noteCompensable();
    // Kept each time the step completes, live or replayed: every attempt knows all of them.
    const kept =
      compensate === undefined
        ? (value: Awaited<T>) => value
        : (value: Awaited<T>) => {
            a.registerCompensation({
              step: name,
              order,
              result: value,
              run: compensate as (result: unknown, context: TaskStepAttemptContext) => unknown,
              options: { retries: config?.retries, timeoutMs: config?.timeoutMs },
            });
            return value;
          };
    // The hot path of a replay: a completed step, loaded packed, answered from memory.
    const done = a.boundaries.journal.completedValue(name);
    if (done !== undefined) return Promise.resolve(kept(decodeValue(done) as Awaited<T>));
    const row = a.boundaries.journal.get(name);
    if (row) {
      a.boundaries.expect(row, "do");
      if (row.state === "completed") {
        return Promise.resolve(kept(decodeValue(row.value) as Awaited<T>));
      }
      if (row.state === "failed") throw a.journaledFailure(row.value);
    }
    // Only a step that runs needs its policy: a journal hit stays as cheap as possible.
    const policy =
      config === undefined
        ? a.defaults
        : resolvePolicy(a.defaults, config.retries, config.timeoutMs, `step "${name}"`);
    if (row) {
      a.goLive();
      if (row.state === "waiting" && row.wake_at !== null && a.now() < row.wake_at) {
        throw a.parkAgain("retry", row.wake_at, name);
      }
      // A retry that is due, or a step a dead attempt left running: the next attempt of it.
      const attempt = row.attempt + 1;
      const retried = this.#execute(name, row.seq, attempt, policy, fn);
      return compensate === undefined ? retried : retried.then(kept);
    }
    a.goLive();
    const seq = a.boundaries.newStep();
    // The step a dead attempt left in flight without a row of its own: this is its next attempt.
    const attempt = this.interrupted?.name === name ? this.interrupted.attempt + 1 : 1;
    const running = this.#execute(name, seq, attempt, policy, fn);
    return compensate === undefined ? running : running.then(kept);
  }

  /**
   * Runs one step's compensation as a step of its own (`__dk:undo:<step>`), with the step's
   * `retries` and `timeoutMs`: journaled, so a compensation that completed is not run again by a
   * later attempt, and one cut short runs again. Resolves when it completed; rejects with its
   * journaled failure, or the end signal when it parked (a retry) or the attempt ended.
   */
  compensate(compensation: Compensation): Promise<unknown> {
    try {
      return this.#do(
        COMPENSATION_PREFIX + compensation.step,
        compensation.options,
        (context) => compensation.run(compensation.result, context),
        true,
      );
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  }

  /**
   * Runs one attempt of a step callback against its deadline: a callback that ignores its signal
   * still loses at the timeout. A callback that returns synchronously completes without a tick and
   * writes one row; one that returns a promise is first marked in flight, in the same turn.
   *
   * Invariant: the step's row is written (synchronously, fenced) before its promise resolves, so
   * the handler never sees a result that is not durable with the same commit.
   */
  #execute<T>(
    name: string,
    seq: number,
    attempt: number,
    policy: StepPolicy,
    fn: StepFn<T>,
  ): Promise<Awaited<T>> {
    const a = this.#a;
    const listening = a.listening;
    const ref = { runId: a.runId, definition: a.definition, step: name, attempt };
    if (listening) a.emit({ type: "task:step:started", ...ref });
    const flight = new Flight(
      a.now() + policy.timeoutMs,
      () => new StepTimeoutError(name, attempt, policy.timeoutMs),
    );
    const context: TaskStepAttemptContext = {
      attempt,
      idempotencyKey: this.idempotencyKey(name),
      get signal() {
        return flight.signal;
      },
    };
    return new Promise<Awaited<T>>((resolve, reject) => {
      let untrack = (): void => {};
      const settle = (ok: boolean, outcome: unknown): void => {
        if (flight.settled) return;
        flight.settled = true;
        untrack();
        try {
          if (!ok) {
            reject(a.stepFailed(name, seq, attempt, policy, outcome));
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
            reject(a.stepFailed(name, seq, attempt, policy, error));
            return;
          }
          if (!a.record(stepRow(name, seq, "do", a.now(), { attempt, value: text }))) {
            reject(a.ended);
            return;
          }
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
      untrack = a.track(flight);
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
        // In flight past this turn: its running row is the evidence a later attempt counts.
        if (!flight.settled && !a.markInFlight(name, seq, attempt)) {
          // Superseded: the callback's outcome no longer matters (nor may it surface unhandled).
          (result as PromiseLike<unknown>).then(undefined, () => {});
          settle(false, a.ended);
          return;
        }
        (result as PromiseLike<unknown>).then(
          (value) => settle(true, value),
          (error: unknown) => settle(false, error),
        );
      } else {
        settle(true, result);
      }
    });
  }

  async sleep(name: string, ms: number): Promise<void> {
    const duration = checkMs(ms, `step.sleep("${name}") ms`);
    return this.#sleep(name, () => this.#a.now() + duration);
  }

  async sleepUntil(name: string, when: number | Date): Promise<void> {
    const at = when instanceof Date ? when.getTime() : when;
    if (typeof at !== "number" || !Number.isFinite(at)) {
      throw new TasksError(
        "tasks/invalid-argument",
        `sleepUntil("${name}") needs a Date or a finite epoch-milliseconds number.`,
      );
    }
    return this.#sleep(name, () => at);
  }

  /** The first recorded deadline wins: a replay before it parks again on the same deadline. */
  #sleep(name: string, deadline: () => number): void {
    const a = this.#a;
    a.enter(name);
    const row = a.boundaries.journal.get(name);
    if (row) {
      a.boundaries.expect(row, "sleep");
      if (row.state === "completed" || row.wake_at === null || a.now() >= row.wake_at) return;
      a.goLive();
      throw a.parkAgain("sleep", row.wake_at, name);
    }
    a.goLive();
    const seq = a.boundaries.newStep();
    const wakeAt = deadline();
    const now = a.now();
    if (wakeAt <= now) {
      if (!a.record(stepRow(name, seq, "sleep", now, { wake_at: wakeAt }))) throw a.ended;
      return;
    }
    throw a.parkNew(
      "sleep",
      wakeAt,
      stepRow(name, seq, "sleep", now, { state: "waiting", wake_at: wakeAt }),
    );
  }

  async waitForEvent<T = unknown>(name: string, options: TaskWaitForEventOptions): Promise<T> {
    const a = this.#a;
    checkOptions(options, `waitForEvent("${name}") options`);
    const type = options?.type;
    checkName(type, `waitForEvent("${name}") type`, false);
    const timeoutMs =
      options.timeoutMs === undefined
        ? null
        : checkMs(options.timeoutMs, `waitForEvent("${name}") timeoutMs`);
    a.enter(name);
    const row = a.boundaries.journal.get(name);
    if (row) {
      a.boundaries.expect(row, "event", type);
      if (row.state === "completed") return decodeValue(row.value) as T;
      if (row.state === "failed") throw a.journaledFailure(row.value);
    }
    const stepSeq = row ? row.seq : a.boundaries.newStep();
    a.goLive();
    // An event sent before this wait (or while the run was not parked on it) is in the buffer.
    const buffered = a.peekEvent(type);
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
      if (row.wake_at !== null && a.now() >= row.wake_at) {
        throw a.failStep(name, stepSeq, "event", new EventTimeoutError(name, type), type);
      }
      throw a.parkAgain("event", row.wake_at, name, type);
    }
    const now = a.now();
    const wakeAt = timeoutMs === null ? null : now + timeoutMs;
    throw a.parkNew(
      "event",
      wakeAt,
      stepRow(name, stepSeq, "event", now, { state: "waiting", wake_at: wakeAt, event_type: type }),
      type,
    );
  }

  /**
   * The version marker of a run (see {@link TaskStep.version}): decided once, at first sight, and
   * kept as a `do` row at `__dk:version:<name>`, so every later replay answers the same number.
   * A run whose journal still holds rows the handler has not reached predates the marker: 0.
   */
  async version(name: string, latest: number): Promise<number> {
    const a = this.#a;
    checkName(name, "A version marker name");
    if (typeof latest !== "number" || !Number.isSafeInteger(latest) || latest < 1) {
      throw new TasksError(
        "tasks/invalid-argument",
        `step.version("${name}", latest) needs latest as an integer ≥ 1; got ${String(latest)}.`,
      );
    }
    const marker = VERSION_MARKER_PREFIX + name;
    a.enter(marker, true);
    const row = a.boundaries.journal.get(marker);
    if (row) {
      a.boundaries.expect(row, "do");
      return decodeValue(row.value) as number;
    }
    // Journaled ground still ahead: the run passed this point before the marker existed.
    const version = a.boundaries.replaying() ? 0 : latest;
    const seq = a.boundaries.newStep();
    const text = a.encode(version, `step.version("${name}")`);
    if (!a.record(stepRow(marker, seq, "do", a.now(), { value: text }))) throw a.ended;
    return version;
  }

  startChild(
    name: string,
    target: TaskChildTarget,
    definition: string,
    input?: unknown,
    options?: TaskStepOptions,
  ): Promise<TaskChildRun> {
    return this.#start(
      name,
      [{ target, definition, input }],
      options,
      `startChild("${name}")`,
    ).then((runs) => runs[0] as TaskChildRun);
  }

  startChildren(
    name: string,
    children: readonly TaskChildSpec[],
    options?: TaskStepOptions,
  ): Promise<TaskChildRun[]> {
    const what = `startChildren("${name}")`;
    if (
      !Array.isArray(children) ||
      children.length === 0 ||
      children.length > MAX_STARTED_CHILDREN
    ) {
      return Promise.reject(
        new TasksError(
          "tasks/invalid-argument",
          `${what} takes a list of 1 to ${MAX_STARTED_CHILDREN} children ({ target, definition, input? }).`,
        ),
      );
    }
    return this.#start(name, children, options, what);
  }

  /** A `do` step that starts `specs` (a bad target or definition is refused at the call, not retried). */
  #start(
    name: string,
    specs: readonly TaskChildSpec[],
    options: TaskStepOptions | undefined,
    what: string,
  ): Promise<TaskChildRun[]> {
    try {
      const a = this.#a;
      const children = this.#childRuns(what);
      // A journaled start is not checked again (a replay needs nothing of the targets).
      if (a.boundaries.journal.get(name) === undefined) {
        for (const spec of specs) {
          if (typeof spec !== "object" || spec === null) {
            throw new TasksError(
              "tasks/invalid-argument",
              `${what} takes children as { target, definition, input? }.`,
            );
          }
          checkName(spec.definition, `${what} definition`);
          children.address(spec.target);
        }
      }
      const run = { runId: a.runId, generation: a.generation, definition: a.definition };
      const start = () => children.start(run, name, specs);
      return options === undefined ? this.do(name, start) : this.do(name, options, start);
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  }

  /**
   * An `awaitChildren` step is an event wait of the reserved type {@link CHILDREN_EVENT}: parked
   * until the last child it needs settles (the parent's side of the protocol makes the run due),
   * and journaled with the positions of the children settled when it was answered (`null`: all),
   * so a replay reports the same ones settled whatever arrived since.
   */
  async awaitChildren(
    name: string,
    runs: TaskChildRun | readonly TaskChildRun[],
    options: TaskAwaitChildrenOptions = {},
  ): Promise<TaskChildOutcome[]> {
    const a = this.#a;
    const children = this.#childRuns(`awaitChildren("${name}")`);
    checkOptions(options, `awaitChildren("${name}") options`);
    const list: readonly TaskChildRun[] = Array.isArray(runs) ? runs : [runs as TaskChildRun];
    if (list.length === 0 || list.length > MAX_AWAITED_CHILDREN) {
      throw new TasksError(
        "tasks/invalid-argument",
        `awaitChildren("${name}") takes 1 to ${MAX_AWAITED_CHILDREN} child runs; got ${list.length}.`,
      );
    }
    for (const run of list) {
      if (typeof run !== "object" || run === null || typeof run.runId !== "string") {
        throw new TasksError(
          "tasks/invalid-argument",
          `awaitChildren("${name}") takes the child runs step.startChild returned.`,
        );
      }
    }
    const count = check.count(options.count, `awaitChildren("${name}") count`, list.length, {
      max: list.length,
    });
    const timeoutMs =
      options.timeoutMs === undefined
        ? null
        : checkMs(options.timeoutMs, `awaitChildren("${name}") timeoutMs`);
    a.enter(name);
    const row = a.boundaries.journal.get(name);
    if (row) {
      a.boundaries.expect(row, "event", CHILDREN_EVENT);
      if (row.state === "completed") {
        return children.outcomes(this.runId, list, decodeValue(row.value) as number[] | null);
      }
      if (row.state === "failed") throw a.journaledFailure(row.value);
    }
    const seq = row ? row.seq : a.boundaries.newStep();
    a.goLive();
    children.checkAwaitable(this.runId, list, `awaitChildren("${name}")`);
    const settled = children.settledPositions(this.runId, list);
    const now = a.now();
    const timedOut = row !== undefined && row.wake_at !== null && now >= row.wake_at;
    if (settled.length >= count || timedOut) {
      const positions = settled.length === list.length ? null : settled;
      const text = a.encode(positions, `awaitChildren("${name}")`);
      // The answer and the end of its wait are one fenced transaction.
      const written = a.record(
        stepRow(name, seq, "event", now, { value: text, event_type: CHILDREN_EVENT }),
        () => children.clearWait(this.runId, name),
      );
      if (!written) throw a.ended;
      return children.outcomes(this.runId, list, positions);
    }
    // The wait's rows are written in the park's fenced transaction: a superseded attempt writes none.
    const wait = () => children.registerWait(this.runId, name, list, count - settled.length);
    if (row) throw a.parkAgain("event", row.wake_at, name, CHILDREN_EVENT, wait);
    const wakeAt = timeoutMs === null ? null : now + timeoutMs;
    throw a.parkNew(
      "event",
      wakeAt,
      stepRow(name, seq, "event", now, {
        state: "waiting",
        wake_at: wakeAt,
        event_type: CHILDREN_EVENT,
      }),
      CHILDREN_EVENT,
      wait,
    );
  }

  #childRuns(what: string): ChildSteps {
    const children = this.#a.children();
    if (children === null) {
      throw new TasksError(
        "tasks/invalid-argument",
        `${what} needs runs in other objects: construct Tasks with { children: { namespaces: env, self: "<this object's binding>" } }.`,
      );
    }
    return children;
  }

  journal(name: string): TaskStepJournal {
    return this.#a.stepJournal(name);
  }

  async status(message: string): Promise<void> {
    this.#a.writeStatus(String(message));
  }

  idempotencyKey(name: string): string {
    return `${this.runId}:${name}`;
  }
}
