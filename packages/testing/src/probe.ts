import type {
  TaskAwaitChildrenOptions,
  TaskChildOutcome,
  TaskChildRun,
  TaskChildSpec,
  TaskDefinitions,
  TaskInterruptedStep,
  TaskStep,
  TaskStepAttemptContext,
  TaskStepJournal,
  TaskStepOptions,
  TaskWaitForEventOptions,
} from "@durablekit/tasks";
import { check } from "./arguments";
import { abortPending } from "./crash-signal";
import { TestingError } from "./errors";
import { noteBusy, takeChildArm, takeMessageFault } from "./fan-out-signal";
import { type ClockScope, captureClock, onTestClock, withClock } from "./handler-clock";
import { ProbeStore, type TestingBoundaryKind, type TestingCrashPosition } from "./probe-store";
import { ProbedJournal } from "./probed-journal";

/** Options of {@link TestingProbe} (none yet: the clock starts at real time). */
export type TestingProbeOptions = Record<string, never>;

/** A promise that never settles: the attempt stops here, as an object that died would. */
const stopHere = (): Promise<never> => new Promise<never>(() => {});

type StepFn<T> = (context: TaskStepAttemptContext) => T | Promise<T>;

/**
 * The test side's hands inside a Durable Object under test: a clock the test moves, and
 * instrumented task definitions that report their durable boundaries and stop where a crash test
 * asks. Construct it in the object (`new TestingProbe(this.ctx)`), pass `probe.now` as the
 * `Tasks`' (and other parts') `now` option and `probe.instrument(definitions)` as its definitions.
 * Inert until a test arms it: the instrumented definitions then run as the originals, with a few
 * rows of bookkeeping per step in its own `dk_testing_*` tables.
 *
 * Its state lives in the object's SQLite, so it survives `abortAllDurableObjects()` and
 * `evictDurableObject()`, and the test's helpers (`advanceTime`, `crashEverywhere`) reach it
 * through `runInDurableObject`.
 */
export class TestingProbe {
  readonly #store: ProbeStore;
  readonly #ctx: DurableObjectState;

  /**
   * Creates (or migrates) the `dk_testing_*` tables.
   *
   * @throws TestingError `testing/invalid-argument` for a `ctx` that is not a SQLite-backed object's
   *   state or options that are not an object; `testing/schema-too-new`.
   */
  constructor(ctx: DurableObjectState, options: TestingProbeOptions = {}) {
    check.ctx(ctx, "new TestingProbe(ctx, options)");
    check.options(options, "new TestingProbe(ctx, options): options");
    this.#store = new ProbeStore(ctx.storage);
    this.#ctx = ctx;
  }

  /**
   * The test clock, epoch milliseconds: real time plus how far tests moved it (`advanceTime`).
   * Pass it as the `now` option of the object's parts. Bound: pass it as is. The instrumented
   * handlers read it too, through `Date.now()`, `new Date()` and their timers.
   */
  readonly now = (): number => this.#store.now();

  /**
   * The same definitions, instrumented: every `step.do`, `step.sleep`, `step.sleepUntil`,
   * `step.waitForEvent` and `step.version`, and every call a program records in a
   * `step.journal(name)`, reports its durable boundary the first time the run passes it live,
   * every step body counts its runs, and where a crash test armed a crash the attempt stops (a
   * promise that never settles) until the test resets the object — or, inside a journal's
   * synchronous write, the probe aborts the object itself (`ctx.abort()`). Each attempt runs on the
   * test clock: in the handler and its step bodies `Date.now()`, `new Date()`, `setTimeout` and
   * `scheduler.wait` follow {@link TestingProbe.now}.
   */
  instrument<Definitions extends TaskDefinitions>(definitions: Definitions): Definitions {
    check.options(definitions, "instrument(definitions)");
    const out: Record<string, unknown> = {};
    for (const [name, entry] of Object.entries(definitions)) {
      // A definition with options keeps them; only its handler is instrumented.
      const handler =
        typeof entry === "function" ? entry : (entry as { handler?: unknown })?.handler;
      if (typeof handler !== "function") {
        throw new TestingError(
          "testing/invalid-argument",
          `instrument(definitions): the handler of "${name}" must be a function (or { handler, …options }).`,
        );
      }
      const instrumented = async (input: never, step: TaskStep) => {
        // An attempt at work: a fan-out's driver lets it run before it moves the clock.
        const objectId = this.#ctx.id.toString();
        noteBusy(objectId, 1);
        try {
          // The handler's own Date.now(), new Date() and timers follow the test clock.
          const value = await onTestClock(this.#ctx, this.now, () =>
            handler(input, new ProbedStep(step, this.#store, this.#ctx)),
          );
          this.#store.boundary(step.runId, "settle", null, false);
          await crashAt(this.#store, "settle", "before");
          return value;
        } finally {
          noteBusy(objectId, -1);
        }
      };
      out[name] = typeof entry === "function" ? instrumented : { ...entry, handler: instrumented };
    }
    return out as Definitions;
  }

  /**
   * Applies a child-run message through `apply` (the object's `tasks.receive`): call it in the
   * object's RPC entry, `receiveTasks(m) { return this.probe.receive(m, (x) => this.tasks.receive(x)); }`.
   * Inert (it calls `apply` once and answers its reply) unless a `crashFanOut` test armed a fault
   * for one of the messages it carries — a single message or a `batch`: `lose` throws before
   * anything is applied (the sender retries), `lose-reply` applies it and throws instead of
   * answering (the sender retries: a duplicate), `duplicate` applies it twice. It notes each
   * message it sees (`start:<step>#<index>`, `settled:<step>#<index>`, `cancel:<step>#<index>`,
   * named by the parent's step) and the child run each start was answered with, and where the test
   * aimed a crash at the child a start creates, arms this object in the turn it applies the start.
   *
   * @throws TestingError `testing/injected-fault` when an armed fault loses the message or its reply.
   */
  async receive<Reply>(
    message: unknown,
    apply: (message: unknown) => Reply | Promise<Reply>,
  ): Promise<Awaited<Reply>> {
    if (typeof apply !== "function") {
      throw new TestingError(
        "testing/invalid-argument",
        "probe.receive(message, apply): apply must be a function, (m) => this.tasks.receive(m).",
      );
    }
    const store = this.#store;
    const parts = messagesOf(message);
    const labels = parts.map((m) => {
      if (m.kind === "cancel") return `cancel:${labelOf(store.startOf(m.key ?? "") ?? "start:?")}`;
      return m.kind === "start" || m.kind === "settled" ? `${m.kind}:${m.step}#${m.index}` : null;
    });
    let fault: ReturnType<typeof takeMessageFault> = null;
    for (let i = 0; i < parts.length; i++) {
      const label = labels[i];
      const m = parts[i];
      if (label === null || label === undefined || m === undefined) continue;
      store.message(label, m.kind as string, typeof m.key === "string" ? m.key : null);
      if (m.kind === "start") {
        const arm = takeChildArm(label);
        if (arm !== null) store.arm(arm);
      }
      fault ??= takeMessageFault(label);
    }
    const objectId = this.#ctx.id.toString();
    noteBusy(objectId, 1);
    try {
      if (fault === "lose") throw lost("the message");
      let reply = await apply(message);
      const replies = repliesOf(reply);
      for (let i = 0; i < parts.length; i++) {
        const runId = replies[i]?.runId;
        const label = labels[i];
        if (parts[i]?.kind === "start" && typeof runId === "string" && typeof label === "string") {
          store.started(label, runId);
        }
      }
      if (fault === "duplicate") reply = await apply(message);
      if (fault === "lose-reply") throw lost("the reply to the message");
      return reply;
    } finally {
      noteBusy(objectId, -1);
    }
  }
}

/** The error of a message (or reply) a fan-out test lost: the sender retries it as any failed call. */
function lost(what: string): TestingError {
  return new TestingError(
    "testing/injected-fault",
    `crashFanOut lost ${what} here on purpose; the sender delivers it again.`,
  );
}

/** `start:<step>#<index>` → `<step>#<index>`. */
function labelOf(startLabel: string): string {
  return startLabel.slice("start:".length);
}

interface MessageFields {
  kind?: unknown;
  step?: unknown;
  index?: unknown;
  key?: string;
}

/** The messages of what `receiveTasks` got: itself, or a batch's (any shape: it crossed RPC). */
function messagesOf(message: unknown): MessageFields[] {
  if (typeof message !== "object" || message === null) return [];
  const m = message as MessageFields & { messages?: unknown };
  if (m.kind === "batch") {
    return Array.isArray(m.messages)
      ? m.messages.map((x) => (typeof x === "object" && x !== null ? (x as MessageFields) : {}))
      : [];
  }
  return [m];
}

/** The replies of what `tasks.receive` answered, aligned with {@link messagesOf}. */
function repliesOf(reply: unknown): Array<{ runId?: unknown } | undefined> {
  if (typeof reply !== "object" || reply === null) return [];
  const r = reply as { replies?: unknown };
  return Array.isArray(r.replies) ? (r.replies as never) : [reply as { runId?: unknown }];
}

/** Stops the attempt when the armed crash is at `label`/`position` (once per arming). */
function crashAt(store: ProbeStore, label: string, position: TestingCrashPosition): Promise<void> {
  const arm = store.armed();
  if (!arm || arm.label !== label || arm.position !== position) return Promise.resolve();
  store.markHit();
  return stopHere();
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * The `TaskStep` an instrumented handler receives: the engine's step, with the probe's bookkeeping
 * and crash points around each call. Every call goes to the engine's step in the same tick it
 * would without the probe, so journal hits, fencing and durability are the engine's own.
 */
class ProbedStep implements TaskStep {
  readonly #engine: TaskStep;
  /** The handler's test clock: the user's step bodies run on it, the engine's calls off it. */
  readonly #clock: ClockScope | undefined = captureClock();
  /**
   * The engine's step, called off the test clock: its own timers (a step's deadline) are real
   * timers, so the only timers on the test clock are the ones the user's code awaits.
   */
  readonly #step: TaskStep = new Proxy({} as TaskStep, {
    get: (_target, key) => {
      const value = (this.#engine as unknown as Record<PropertyKey, unknown>)[key];
      if (typeof value !== "function") return value;
      return (...args: unknown[]) =>
        withClock(undefined, () =>
          (value as (...a: unknown[]) => unknown).apply(this.#engine, args),
        );
    },
  });
  readonly #store: ProbeStore;
  readonly #ctx: DurableObjectState;

  constructor(step: TaskStep, store: ProbeStore, ctx: DurableObjectState) {
    this.#engine = step;
    this.#store = store;
    this.#ctx = ctx;
  }

  get runId(): string {
    return this.#step.runId;
  }

  get attempt(): number {
    return this.#step.attempt;
  }

  get interrupted(): TaskInterruptedStep | null {
    return this.#step.interrupted;
  }

  do<T>(name: string, fn: StepFn<T>): Promise<Awaited<T>>;
  do<T>(name: string, options: TaskStepOptions, fn: StepFn<T>): Promise<Awaited<T>>;
  async do<T>(
    name: string,
    optionsOrFn: TaskStepOptions | StepFn<T>,
    maybeFn?: StepFn<T>,
  ): Promise<Awaited<T>> {
    const options = typeof optionsOrFn === "function" ? undefined : optionsOrFn;
    const fn = typeof optionsOrFn === "function" ? optionsOrFn : maybeFn;
    if (typeof fn !== "function") {
      return options === undefined
        ? this.#step.do(name, fn as unknown as StepFn<T>)
        : this.#step.do(name, options, fn as unknown as StepFn<T>);
    }
    const store = this.#store;
    const runId = this.#step.runId;
    const label = `do:${name}`;
    const arm = store.armed();
    // A body that returns synchronously writes its result in the turn it runs: the only crash
    // "before" it is one before the step starts.
    if (arm?.label === label && arm.position === "before" && !arm.async) {
      await crashAt(store, label, "before");
    }
    let live = false;
    const body = (context: TaskStepAttemptContext): T | Promise<T> => {
      live = true;
      store.bodyStarted(runId, name);
      const result = withClock(this.#clock, () => fn(context));
      if (!isThenable(result)) {
        store.boundary(runId, "do", name, false);
        return result;
      }
      // The body's effects are done (its own boundaries, a program's journal rows, came first); its
      // result is not written yet.
      const objectId = this.#ctx.id.toString();
      return Promise.resolve(result).then(
        async (value) => {
          // A crash after a journal row inside the body is on its way: the result is never written.
          if (abortPending(objectId)) await stopHere();
          store.boundary(runId, "do", name, true);
          await crashAt(store, label, "before");
          return value as T;
        },
        async (error: unknown) => {
          if (abortPending(objectId)) await stopHere();
          store.boundary(runId, "do", name, true);
          throw error;
        },
      );
    };
    const value =
      options === undefined
        ? await this.#step.do(name, body)
        : await this.#step.do(name, options, body);
    store.stepRecorded(runId, name);
    if (live) await crashAt(store, label, "after");
    return value;
  }

  sleep(name: string, ms: number): Promise<void> {
    return this.#wait("sleep", name, () => this.#step.sleep(name, ms));
  }

  sleepUntil(name: string, when: number | Date): Promise<void> {
    return this.#wait("sleep", name, () => this.#step.sleepUntil(name, when));
  }

  waitForEvent<T = unknown>(name: string, options: TaskWaitForEventOptions): Promise<T> {
    return this.#wait("event", name, () => this.#step.waitForEvent<T>(name, options));
  }

  /** A child start is a step like a `do`: a boundary before and after it. */
  startChild(...call: Parameters<TaskStep["startChild"]>): Promise<TaskChildRun> {
    const [name, target] = call;
    this.#store.target(JSON.stringify(target));
    return this.#wait("do", name, () => this.#step.startChild(...call));
  }

  /** Many child starts are one step like a `do`: a boundary before and after it. */
  startChildren(
    name: string,
    children: readonly TaskChildSpec[],
    options?: TaskStepOptions,
  ): Promise<TaskChildRun[]> {
    if (Array.isArray(children)) {
      for (const child of children) {
        if (typeof child === "object" && child !== null) {
          this.#store.target(JSON.stringify(child.target));
        }
      }
    }
    return this.#wait("do", name, () => this.#step.startChildren(name, children, options));
  }

  awaitChildren(
    name: string,
    runs: TaskChildRun | readonly TaskChildRun[],
    options?: TaskAwaitChildrenOptions,
  ): Promise<TaskChildOutcome[]> {
    return this.#wait("event", name, () => this.#step.awaitChildren(name, runs, options));
  }

  async version(name: string, latest: number): Promise<number> {
    const label = `version:${name}`;
    await crashAt(this.#store, label, "before");
    const version = await this.#step.version(name, latest);
    this.#store.boundary(this.#step.runId, "version", name, false);
    await crashAt(this.#store, label, "after");
    return version;
  }

  /** A sleep, an event wait or a child start: a boundary whether it passes or parks the run. */
  async #wait<T>(kind: TestingBoundaryKind, name: string, call: () => Promise<T>): Promise<T> {
    const label = `${kind}:${name}`;
    await crashAt(this.#store, label, "before");
    let value: T;
    try {
      value = await call();
    } catch (error) {
      // A park ends the attempt: the crash "after" it is a reset of the parked run.
      this.#store.boundary(this.#step.runId, kind, name, false);
      const arm = this.#store.armed();
      if (arm?.label === label && arm.position === "after") this.#store.markHit();
      throw error;
    }
    this.#store.boundary(this.#step.runId, kind, name, false);
    await crashAt(this.#store, label, "after");
    return value;
  }

  journal(name: string): TaskStepJournal {
    return new ProbedJournal(this.#step.journal(name), this.#store, this.#ctx, this.#step.runId);
  }

  status(message: string): Promise<void> {
    return this.#step.status(message);
  }

  idempotencyKey(name: string): string {
    return this.#step.idempotencyKey(name);
  }
}
