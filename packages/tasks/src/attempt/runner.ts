import { createEmitter, isComposeError, requestWake } from "@durablekit/compose";
import type { ChildSteps } from "../children/child-steps";
import { MissingDefinitionError, RunTimeoutError, TasksError } from "../errors";
import type { TaskEvent } from "../events";
import type { StepPolicy } from "../policy";
import { Journal } from "../steps/journal";
import { ReplayStep } from "../steps/step";
import { type RunRow, TERMINAL_STATES } from "../store/rows";
import type { TaskStore } from "../store/store";
import type { TaskDefinitions, TaskStep, TasksOptions } from "../types";
import { decodeValue, errorInfo, errorText } from "../values";
import { Attempt, type AttemptDeps } from "./attempt";

/** Due runs one `alarm()` starts; the rest stay due and keep the next wake at "now". */
const RUNS_PER_ALARM = 100;
/**
 * The longest `alarm()` waits for the attempts it started before returning (they keep running).
 * It returns sooner when a run that is not one of them needs a wake: see {@link Runner.alarm}.
 */
const ALARM_BUDGET_MS = 10_000;

type Handler = (input: unknown, step: TaskStep) => unknown;

/** What the runner needs from its {@link Tasks}. */
export interface RunnerConfig {
  /** The object's state: wakes are requested through it (`requestWake`, earlier-only). */
  ctx: DurableObjectState;
  store: TaskStore;
  /** Each definition's handler, by name. */
  handlers: ReadonlyMap<string, Handler>;
  /**
   * A queued run whose wake came (a debounce ended): true when it took a slot and is pending now
   * (the runner claims it at once), false when it waits in its key's queue.
   */
  releaseQueued: (runId: string, now: number) => boolean;
  /** The engine's earliest wake besides its runs' (a flow key's rate window, a schedule's tick). */
  otherWakeAt: () => number | null;
  defaults: StepPolicy;
  claimTimeoutMs: number;
  maxValueBytes: number;
  maxSteps: number;
  /** Consecutive attempts that may end without journal progress before the run fails. */
  maxAttemptsWithoutProgress: number;
  now: () => number;
  hooks: Pick<TasksOptions<TaskDefinitions>, "onEvent" | "onError">;
  /** Runs in other objects (the `children` option), or null; read when an attempt needs them. */
  children: () => ChildSteps | null;
}

/**
 * Claims due runs and drives their attempts: the claim (a fresh generation, the claim deadline as
 * the backstop wake), the replay of the handler, and the alarm's share of the work. Holds the
 * attempts alive in this isolate, so a wake for a run that is already running extends its claim
 * instead of starting a second attempt.
 */
export class Runner {
  /** The attempts alive in this isolate, by run id: at most one per run. */
  readonly active = new Map<string, Attempt>();
  /** Delivers an event to `onEvent` (a throwing listener is reported and ignored, as in every package). */
  readonly emit: (event: TaskEvent) => void;
  readonly #config: RunnerConfig;
  readonly #deps: AttemptDeps;
  /** Wake requests not yet landed; public calls wait for them before returning. */
  readonly #wakes = new Set<Promise<void>>();
  /** The waits of `alarm()` calls for their attempts: each is told of every wake asked for meanwhile. */
  readonly #waiting = new Set<(at: number) => void>();

  constructor(config: RunnerConfig) {
    this.#config = config;
    this.emit = createEmitter("@durablekit/tasks", config.hooks.onEvent);
    this.#deps = {
      store: config.store,
      defaults: config.defaults,
      maxValueBytes: config.maxValueBytes,
      maxSteps: config.maxSteps,
      listening: config.hooks.onEvent !== undefined,
      now: config.now,
      emit: this.emit,
      requestWake: (at) => this.requestWake(at),
      release: (attempt) => {
        if (this.active.get(attempt.runId) === attempt) this.active.delete(attempt.runId);
      },
      onFailed: (error, runId, definition) => this.reportError(error, runId, definition),
      children: config.children,
    };
  }

  /**
   * Starts an attempt for every due run (the claim backstop reclaims runs whose attempt died),
   * extends the claims of attempts still alive in this isolate (and settles a cancel one of them
   * never reached a boundary for), and waits for the attempts it started: until they end, until
   * the engine's next wake is due (another run's retry, sleep or claim deadline), or 10 s.
   *
   * The wait never holds a later wake: an object runs one alarm handler at a time, so a wake due
   * while this handler waits would fire only after it returns. Returning early is safe for the
   * attempts still running: they go on in this isolate, each under its claim and generation
   * fence, and their claim deadline (`claimTimeoutMs`) wakes the object again, which extends the
   * claim of an attempt still alive here (see the loop below) and so keeps an event reaching the
   * object at least that often while it runs.
   */
  async alarm(): Promise<void> {
    const { store, claimTimeoutMs } = this.#config;
    const now = this.#config.now();
    const started: Promise<void>[] = [];
    for (const runId of store.runs.dueRuns(now, RUNS_PER_ALARM)) {
      const active = this.active.get(runId);
      if (active) {
        // A cancel, or a deadline, that the attempt has not reached a boundary for settles here.
        active.checkDeadline();
        if (active.stopRequested && active.stopSettlesNow) active.settleStopped();
        else {
          const deadline = claimDeadline(now + claimTimeoutMs, active.deadlineAt);
          store.runs.refreshClaim(runId, active.generation, deadline, now);
        }
        continue;
      }
      const attempt = this.start(runId, now);
      if (attempt) started.push(attempt);
    }
    await this.flushWakes();
    if (started.length === 0) return;
    await this.#waitFor(started, now + ALARM_BUDGET_MS);
  }

  /**
   * Waits until `attempts` end, `until` passes, or the engine's next wake is due, whichever is
   * first. The next wake is read once (the earliest of the runs whose attempts are not alive
   * here) and then lowered by every wake asked for during the wait (a retry's back-off, a sleep).
   */
  async #waitFor(attempts: Promise<void>[], until: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let deadline = Number.POSITIVE_INFINITY;
    let wake: () => void = () => {};
    const due = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const arm = (at: number) => {
      if (at >= deadline) return;
      deadline = at;
      clearTimeout(timer);
      timer = setTimeout(wake, Math.max(0, at - this.#config.now()));
    };
    arm(until);
    // The attempts alive here need no wake while this handler waits for them; any other run does.
    const next = this.#config.store.runs.nextWakeAtExcept(this.active);
    if (next !== null) arm(next);
    const other = this.#config.otherWakeAt();
    if (other !== null) arm(other);
    this.#waiting.add(arm);
    try {
      await Promise.race([Promise.allSettled(attempts), due]);
    } finally {
      clearTimeout(timer);
      this.#waiting.delete(arm);
    }
  }

  /**
   * Claims a due run and starts its attempt; synchronous up to the handler's first `await`.
   * Returns the attempt's completion (which never rejects), or null when nothing started.
   */
  start(runId: string, now: number): Promise<void> | null {
    if (this.active.has(runId)) return null;
    const row = this.#config.store.runs.getRun(runId);
    if (!row || TERMINAL_STATES.has(row.state)) return null;
    // A cancel of a run with compensations to run is claimed like a due run (below): the attempt
    // undoes the completed steps, then settles it cancelled.
    const undo =
      row.cancel_requested === 1 &&
      row.compensable === 1 &&
      this.#config.handlers.has(row.definition);
    if (row.cancel_requested === 1 && !undo) {
      if (this.#config.store.settle(runId, null, { state: "cancelled" }, now)) {
        this.emit({
          type: "task:cancelled",
          runId,
          definition: row.definition,
          reason: row.cancel_reason,
        });
      }
      return null;
    }
    if (row.pause_requested === 1) {
      // A pause asked of an attempt that is gone: the run is held now, with nothing more run.
      if (this.#config.store.pause(runId, now)) {
        this.emit({ type: "task:paused", runId, definition: row.definition, step: null });
      }
      return null;
    }
    if (row.next_at === null || row.next_at > now) return null;
    if (row.state === "queued") {
      // A debounce's quiet period ended: the run takes a slot (and is claimed now) or waits for one.
      return this.#config.releaseQueued(runId, now) ? this.start(runId, now) : null;
    }
    const ref = { runId, definition: row.definition };
    if (row.deadline_at !== null && row.deadline_at !== undefined && now >= row.deadline_at) {
      this.#failUnclaimed(row, new RunTimeoutError(row.run_id, row.deadline_at), now);
      return null;
    }
    const handler = this.#config.handlers.get(row.definition);
    if (handler === undefined) {
      this.#failUnclaimed(row, new MissingDefinitionError(row.definition), now);
      return null;
    }
    // A run never claimed has no journal yet: its first claim reads none.
    const load =
      row.attempt === 0
        ? { packed: [], rows: [], calls: [], interrupted: null, maxEvent: null }
        : this.#config.store.steps.loadJournal(runId, row.state === "running");
    const journal = new Journal(load);
    const interrupted = load.interrupted;
    // The breaker: a reclaim (the last attempt died or was abandoned) that finds no more settled
    // journal rows than the last claim did is one more attempt without progress.
    const progress = journal.settled;
    const stalls = row.state === "running" && progress <= row.progress ? row.stalls + 1 : 0;
    if (stalls >= this.#config.maxAttemptsWithoutProgress) {
      this.#failUnclaimed(
        row,
        new TasksError(
          "tasks/too-many-attempts",
          `Run "${row.run_id}" failed: its last ${stalls} attempts ended (the object died or was reset, or the attempt was abandoned) without journaling a step; raise maxAttemptsWithoutProgress if that is expected.`,
        ),
        now,
      );
      return null;
    }
    const generation = crypto.randomUUID();
    const number = row.attempt + 1;
    // The claim's wake comes at the run's deadline at the latest, to stop the attempt there.
    const deadline = claimDeadline(now + this.#config.claimTimeoutMs, row.deadline_at ?? null);
    const claimed = this.#config.store.claim(
      runId,
      row.generation,
      generation,
      number,
      deadline,
      { progress, stalls },
      now,
      undo,
    );
    if (!claimed) return null;
    // The claim's events, in the block (the transaction) that claimed.
    if (row.state === "running") {
      const cut = { attempt: row.attempt, step: interrupted?.name ?? null };
      this.#config.store.log.append(runId, "task:attempt:interrupted", cut, now);
    }
    this.#config.store.log.append(runId, "task:attempt:started", { attempt: number }, now);
    if (row.state === "running") {
      this.emit({
        type: "task:attempt:interrupted",
        ...ref,
        attempt: row.attempt,
        step: interrupted?.name ?? null,
      });
    }
    this.requestWake(deadline);
    const attempt = new Attempt(this.#deps, {
      runId,
      definition: row.definition,
      generation,
      number,
      retain: row.retain === 1,
      journal,
      startsLive: number === 1,
      deadlineAt: row.deadline_at ?? null,
      cancel: undo ? { reason: row.cancel_reason } : null,
    });
    this.active.set(runId, attempt);
    this.emit({
      type: "task:attempt:started",
      ...ref,
      attempt: number,
      ...(row.trace === null || row.trace === undefined ? {} : { trace: row.trace }),
    });
    return this.#drive(attempt, handler, row.input, new ReplayStep(attempt, interrupted));
  }

  /**
   * Fails a run without claiming it, with `error`: its definition is gone
   * (`tasks/missing-definition`), its deadline has passed (`tasks/run-timeout`), or its attempts
   * keep ending without journal progress (`tasks/too-many-attempts`).
   */
  #failUnclaimed(row: RunRow, error: TasksError, now: number): void {
    const record = errorText(error);
    if (this.#config.store.settle(row.run_id, null, { state: "failed", error: record }, now)) {
      this.emit({
        type: "task:failed",
        runId: row.run_id,
        definition: row.definition,
        error: errorInfo(record),
      });
      this.reportError(error, row.run_id, row.definition);
    }
  }

  async #drive(attempt: Attempt, handler: Handler, input: string, step: ReplayStep): Promise<void> {
    try {
      let value: unknown;
      try {
        value = await handler(decodeValue(input), step);
      } catch (thrown) {
        // A run that fails, or is cancelled, undoes its completed steps first (their `compensate`).
        if (await this.#compensate(attempt, step, { thrown })) attempt.settleThrown(thrown);
        return;
      }
      if (await this.#compensate(attempt, step, null)) attempt.settleCompleted(value);
    } catch (error) {
      // A storage failure while settling: give the run up; its claim deadline replays it.
      console.error(
        `@durablekit/tasks: attempt ${attempt.number} of run "${attempt.runId}" could not settle`,
        error,
      );
    } finally {
      attempt.abandon();
    }
  }

  /**
   * Runs the run's compensations when the handler's end calls for them; false when the attempt
   * ended while they ran (a compensation's retry parked the run, or the object is going away).
   */
  async #compensate(
    attempt: Attempt,
    step: ReplayStep,
    outcome: { thrown: unknown } | null,
  ): Promise<boolean> {
    if (!attempt.mustCompensate(outcome)) return true;
    try {
      await attempt.compensate(step);
      return true;
    } catch (ended) {
      attempt.settleThrown(ended);
      return false;
    }
  }

  /**
   * Asks for a wake no later than `at` through the object's alarm, earlier-only (`requestWake`):
   * it never moves a wake another part asked for later. Public calls wait for the request to land.
   */
  requestWake(at: number): void {
    for (const told of this.#waiting) told(at);
    const tracked: Promise<void> = requestWake(this.#config.ctx, at)
      .catch((error) => this.#warn("requestWake", error))
      .finally(() => this.#wakes.delete(tracked));
    this.#wakes.add(tracked);
  }

  /** Waits until every wake requested so far has landed. */
  async flushWakes(): Promise<void> {
    while (this.#wakes.size > 0) await Promise.all([...this.#wakes]);
  }

  /** Hands the error of a failed run to `onError`; a throwing callback is ignored. */
  reportError(error: Error, runId: string, definition: string): void {
    const onError = this.#config.hooks.onError;
    if (!onError) return;
    try {
      const pending = onError(error, { runId, definition });
      if (pending) Promise.resolve(pending).catch((failure) => this.#warn("onError", failure));
    } catch (failure) {
      this.#warn("onError", failure);
    }
  }

  #warn(what: "onError" | "requestWake", error: unknown): void {
    // A class with no alarm() handler is reported by @durablekit/compose, once, with the fix.
    if (what === "requestWake" && isComposeError(error, "compose/not-delegated")) return;
    const message =
      what === "onError"
        ? "the onError callback threw; ignoring it."
        : "a wake request failed; the run's wake time stays in nextWakeAt().";
    console.warn(`@durablekit/tasks: ${message}`, error);
  }
}

/** A claim's deadline: `claimAt`, or the run's own deadline when that comes first. */
function claimDeadline(claimAt: number, deadlineAt: number | null): number {
  return deadlineAt === null ? claimAt : Math.min(claimAt, deadlineAt);
}
