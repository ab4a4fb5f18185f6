import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import type { TaskRunSnapshot, Tasks } from "@durablekit/tasks";
import { check } from "./arguments";
import { additions, aliasesOf, type RunFacts, repeated, withAliases } from "./crash-compare";
import { abortSignalled } from "./crash-signal";
import { TestingError } from "./errors";
import { clearTimers, clockMoved } from "./handler-clock";
import {
  ProbeStore,
  type TestingBoundary,
  type TestingCrashPosition,
  type TestingStepBodies,
} from "./probe-store";

/** Options of {@link crashEverywhere}. */
export interface TestingCrashOptions<Instance extends Rpc.DurableObjectBranded | undefined> {
  /**
   * The namespace of the object under test (`env.ORDERS`): each run (the uninterrupted one and
   * every crash) gets a fresh object of it. The object must construct a `TestingProbe` and give its
   * parts `now: probe.now` and its `Tasks` `probe.instrument(definitions)`.
   */
  namespace: DurableObjectNamespace<Instance>;
  /**
   * The object's `Tasks` part. Its `steps(runId)` (when present) lets the checks tell the values a
   * run made for itself (an id made inside a step, the run id) from a difference.
   */
  tasks: (instance: Instance) => Pick<Tasks, "get" | "sendEvent"> & Partial<Pick<Tasks, "steps">>;
  /** Starts the run inside the object; returns its run id (or `tasks.run`'s receipt). */
  start: (instance: Instance) => Promise<string | { runId: string }> | string | { runId: string };
  /**
   * What the run did outside its journal — rows of your own tables, calls a fake service counted —
   * as JSON. Compared with the uninterrupted run's after every crash: a difference is a problem,
   * named with the steps that ran again.
   */
  effects?: (instance: Instance, runId: string) => unknown;
  /**
   * The chunks of the streams the run writes, by stream id (e.g.
   * `{ [id]: instance.streams.readPage(id).chunks.map((c) => c.chunk) }`). After every crash each
   * stream must hold the uninterrupted run's chunks, each once, in order. Streams are matched by
   * key across runs: every run has a fresh object, so fixed stream ids (and run ids) work.
   */
  streams?: (instance: Instance, runId: string) => Record<string, readonly unknown[]>;
  /** Event payloads by type: sent when the run waits for an event of that type. */
  events?: Record<string, unknown>;
  /** Which sides of each boundary to crash on (both). */
  positions?: readonly TestingCrashPosition[];
  /** Most wakes (alarms and events) one run may take to settle (1,000). */
  maxWakes?: number;
  /** How long a run may keep running without a wake before the clock is moved to its next alarm (2,000 ms). */
  runningMs?: number;
}

/** A check that failed after one crash. */
export interface TestingCrashProblem {
  /** The boundary the crash was at (its label: `do:charge`, `sleep:nap`, `settle`, …). */
  boundary: string;
  /** The boundary's index in the run's order of boundaries. */
  index: number;
  /**
   * The side of the boundary the crash was on; `retry` for a problem of the uninterrupted run
   * itself: a step's retry repeated what its failed attempt had done (found without a crash).
   */
  position: TestingCrashPosition | "retry";
  /**
   * `result`: the run settled differently; `effects`: what it did outside its journal differs (or,
   * at `position: "retry"`, a retried step's attempt repeated its failed attempt's effects);
   * `stream`: a stream's chunks differ (a chunk twice, missing or out of order); `ran-after-recorded`:
   * a step's body ran after its result had reached the handler; `unreached`: the run settled
   * without passing the boundary (the handler does not take the same path twice).
   */
  kind: "result" | "effects" | "stream" | "ran-after-recorded" | "unreached";
  /** Steps whose body ran more often than in the uninterrupted run (or after being recorded). */
  steps: string[];
  /**
   * For a crash at a journal boundary: the host call it records, `module.method` (`null` for
   * other boundaries). Cut "before", that call ran and its outcome was not written, so the program's
   * replay ran it again with the same `callId`.
   */
  call: string | null;
  message: string;
}

/** One crash: the boundary, the side, and which step bodies ran again because of it. */
export interface TestingCrashCase {
  boundary: string;
  index: number;
  position: TestingCrashPosition;
  /** Steps whose body ran more often than in the uninterrupted run (allowed for a step cut mid-body). */
  reran: string[];
  ok: boolean;
}

/** The report of {@link crashEverywhere}. */
export interface TestingCrashReport {
  /** True when every crash passed every check. */
  ok: boolean;
  /** The run's durable boundaries, learned from the uninterrupted run. */
  boundaries: TestingBoundary[];
  /** The uninterrupted run's settled snapshot. */
  baseline: TaskRunSnapshot;
  /**
   * What `effects` returned for the uninterrupted run once it settled (as JSON: Maps, Sets and
   * BigInts in their stable forms), the reference every crash is compared with; `undefined`
   * without an `effects` option.
   */
  baselineEffects: unknown;
  /** Every crash explored, in order. */
  cases: TestingCrashCase[];
  problems: TestingCrashProblem[];
  /** Wall time of the whole exploration, in milliseconds. */
  ms: number;
}

/** What one run settled to, as the checks read it. */
export interface Settled {
  snapshot: TaskRunSnapshot;
  bodies: TestingStepBodies[];
  effects: string | undefined;
  streams: Record<string, readonly unknown[]> | undefined;
  /** The run's id and journal: what it made for itself, compared by where it made it. */
  facts?: RunFacts;
}

/** The run as one attempt left it (parked or settled): read by the uninterrupted run's driver. */
interface AttemptTrace {
  attempt: number;
  /** Why it parked (`retry`: a step failed and waits for its retry), or null once settled. */
  reason: string | null;
  effects: unknown;
  bodies: Map<string, number>;
}

/**
 * Runs a task run once to learn its durable boundaries — each step's result written, each sleep or
 * event wait recorded, each version marker, the settle — then runs it again in a fresh object for
 * every boundary and side: the object is reset (`abortAllDurableObjects()`: memory dropped, SQLite
 * kept) right before the boundary's write (for a step whose body awaits, after the body and before
 * its result is written) or right after it, and its alarm recovers the run on the probe's clock.
 * After each it checks that the run settles as the uninterrupted one did, that no step body ran
 * after its result was recorded, that `effects` match, and that the `streams` hold every chunk once,
 * in order. A check that fails is a problem naming the boundary, the side and the steps that ran
 * again.
 *
 * Resets every object of the test's Worker at each crash: run it in a test of its own, not
 * concurrently with others.
 *
 * @throws TestingError `testing/invalid-argument` for bad options; `testing/not-found` when `start`
 *   returns no run id of the object; `testing/unsettled` when the uninterrupted run does not settle.
 */
export async function crashEverywhere<Instance extends Rpc.DurableObjectBranded | undefined>(
  options: TestingCrashOptions<Instance>,
): Promise<TestingCrashReport> {
  check.options(options, "crashEverywhere(options)");
  if (typeof options.namespace?.getByName !== "function") {
    throw new TestingError(
      "testing/invalid-argument",
      "crashEverywhere(options): namespace must be a Durable Object namespace binding (env.MY_OBJECT).",
    );
  }
  for (const name of ["tasks", "start"] as const) {
    if (typeof options[name] !== "function") {
      throw new TestingError(
        "testing/invalid-argument",
        `crashEverywhere(options): ${name} must be a function.`,
      );
    }
  }
  check.callback(options.effects, "effects");
  check.callback(options.streams, "streams");
  const maxWakes = check.count(options.maxWakes, "maxWakes", 1_000);
  const runningMs = check.ms(options.runningMs, "runningMs", 2_000);
  const positions = options.positions ?? (["before", "after"] as const);
  const started = Date.now();
  const driver = new RunDriver(options, maxWakes, runningMs);

  // ── The uninterrupted run: its boundaries and what it settles to ──
  const fresh = () =>
    options.namespace.getByName(`crash-everywhere-${crypto.randomUUID()}`) as DurableObjectStub;
  const first = fresh();
  const firstRun = await driver.start(first);
  const trace: AttemptTrace[] = [];
  const baseline = await driver.settle(first, firstRun, false, trace);
  if (baseline === null) {
    throw new TestingError(
      "testing/unsettled",
      `crashEverywhere: the uninterrupted run "${firstRun}" did not settle within ${maxWakes} wakes; pass events for the events it waits for.`,
    );
  }
  const boundaries = await runInDurableObject(first, (_instance, state) =>
    new ProbeStore(state.storage).boundaries(firstRun),
  );
  const runsOf = new Map(baseline.bodies.map((b) => [b.step, b.runs]));
  const problems: TestingCrashProblem[] =
    options.effects === undefined ? [] : retriedEffects(trace, boundaries);

  // ── One crash per boundary and side ──
  const cases: TestingCrashCase[] = [];
  for (const boundary of boundaries) {
    for (const position of positions) {
      if (boundary.kind === "settle" && position === "after") continue;
      let stub = fresh();
      await runInDurableObject(stub, (_instance, state) =>
        new ProbeStore(state.storage).arm({
          label: boundary.label,
          position,
          async: boundary.async,
        }),
      );
      const runId = await driver.start(stub);
      const reached = await driver.untilCrash(stub, runId);
      if (reached) {
        await abortAllDurableObjects();
        clearTimers();
        // A stub connected to an aborted object stays broken: reach the object anew.
        stub = options.namespace.get(stub.id) as DurableObjectStub;
        // A crash the probe made itself (ctx.abort) could not write that it fired: disarm it here.
        await runInDurableObject(stub, (_instance, state) =>
          new ProbeStore(state.storage).markHit(),
        );
      }
      const outcome = await driver.settle(stub, runId, reached);
      const where = { boundary: boundary.label, index: boundary.index, position };
      const reran = outcome
        ? outcome.bodies.filter((b) => b.runs > (runsOf.get(b.step) ?? 0)).map((b) => b.step)
        : [];
      const found = checkCrash(
        { ...where, call: boundary.call },
        reached,
        baseline,
        outcome,
        reran,
        maxWakes,
      );
      problems.push(...found);
      cases.push({ ...where, reran, ok: found.length === 0 });
    }
  }
  return {
    ok: problems.length === 0,
    boundaries,
    baseline: baseline.snapshot,
    baselineEffects: baseline.effects === undefined ? undefined : JSON.parse(baseline.effects),
    cases,
    problems,
    ms: Date.now() - started,
  };
}

/**
 * The problems of the uninterrupted run itself: an attempt that parked for a step's retry changed
 * the effects, and the attempt after it changed them the same way again — the retried step's body
 * did its work twice (a charge under a fresh key, an unkeyed insert). Found without a crash: a
 * plain run that retries once does it.
 */
function retriedEffects(
  trace: readonly AttemptTrace[],
  boundaries: readonly TestingBoundary[],
): TestingCrashProblem[] {
  const problems: TestingCrashProblem[] = [];
  for (let i = 0; i + 1 < trace.length; i++) {
    const failed = trace[i] as AttemptTrace;
    const retry = trace[i + 1] as AttemptTrace;
    if (failed.reason !== "retry") continue;
    const before = i === 0 ? null : (trace[i - 1] as AttemptTrace).effects;
    const twice = repeated(
      additions(before, failed.effects),
      additions(failed.effects, retry.effects),
    );
    if (twice.length === 0) continue;
    // The retried step: its body had run before the park, and ran again in the next attempt.
    const steps = [...retry.bodies]
      .filter(
        ([step, runs]) =>
          (failed.bodies.get(step) ?? 0) > 0 && runs > (failed.bodies.get(step) ?? 0),
      )
      .map(([step]) => step);
    const boundary =
      boundaries.find((b) => b.kind === "do" && b.name === steps[0]) ??
      ({ label: steps[0] === undefined ? "retry" : `do:${steps[0]}`, index: -1 } as const);
    problems.push({
      boundary: boundary.label,
      index: boundary.index,
      position: "retry",
      kind: "effects",
      steps,
      call: null,
      message: `In the uninterrupted run, attempt ${failed.attempt} failed and was retried, and the retry did again what the failed attempt had done: ${twice.join(", ")}${steps.length > 0 ? ` — ${names(steps)} is not idempotent across its own retries (use the step's idempotencyKey)` : ""}.`,
    });
  }
  return problems;
}

/** Where a check failed: the fields a problem carries besides what it found. */
type Where = Pick<TestingCrashProblem, "boundary" | "index" | "call"> & { position: string };

/**
 * The checks after one crash (or message fault, named by `crash`): what differs from the
 * uninterrupted run, as problems.
 */
export function checkCrash<W extends Where>(
  where: W,
  reached: boolean,
  baseline: Settled,
  outcome: Settled | null,
  reran: string[],
  maxWakes: number,
  crash = `a crash ${where.position} ${where.boundary}`,
): Array<W & Pick<TestingCrashProblem, "kind" | "steps" | "message">> {
  const found: Array<W & Pick<TestingCrashProblem, "kind" | "steps" | "message">> = [];
  if (!reached) {
    found.push({
      ...where,
      kind: "unreached",
      steps: [],
      message: `The run settled without passing ${where.boundary} again: the handler does not take the same path on every run (make what decides its steps deterministic).`,
    });
  }
  if (outcome === null) {
    found.push({
      ...where,
      kind: "result",
      steps: reran,
      message: `After ${crash} the run did not settle within ${maxWakes} wakes.`,
    });
    return found;
  }
  // Values each run made for itself (ids and times journaled by a step, the run id) compare by
  // where the run made them.
  const aliases =
    baseline.facts !== undefined && outcome.facts !== undefined
      ? aliasesOf(baseline.facts, outcome.facts)
      : [];
  const mine = (text: string | undefined) => withAliases(text, aliases, "baseline");
  const theirs = (text: string | undefined) => withAliases(text, aliases, "outcome");
  const want = mine(stable(settledView(baseline.snapshot)));
  const got = theirs(stable(settledView(outcome.snapshot)));
  if (got !== want) {
    found.push({
      ...where,
      kind: "result",
      steps: reran,
      message: `After ${crash} the run settled as ${got}, not as the uninterrupted run did (${want}).`,
    });
  }
  const again = outcome.bodies.filter((b) => b.runsAfterRecorded > 0).map((b) => b.step);
  if (again.length > 0) {
    found.push({
      ...where,
      kind: "ran-after-recorded",
      steps: again,
      message: `After ${crash} the body of ${names(again)} ran again although its result had been recorded.`,
    });
  }
  if (theirs(outcome.effects) !== mine(baseline.effects)) {
    found.push({
      ...where,
      kind: "effects",
      steps: reran,
      message: `After ${crash} the run's effects are ${outcome.effects}, not ${baseline.effects}${ranAgain(where, reran)}.`,
    });
  }
  for (const id of Object.keys({ ...baseline.streams, ...outcome.streams })) {
    const chunksWanted = mine(stable(baseline.streams?.[id] ?? []));
    const chunksGot = theirs(stable(outcome.streams?.[id] ?? []));
    if (chunksGot !== chunksWanted) {
      found.push({
        ...where,
        kind: "stream",
        steps: reran,
        message: `After ${crash} stream "${id}" holds ${chunksGot}, not ${chunksWanted} (each chunk once, in order)${ranAgain(where, reran)}.`,
      });
    }
  }
  return found;
}

const names = (steps: readonly string[]) => steps.map((s) => `step "${s}"`).join(", ");

/** What ran again because of the crash, as the end of a problem's message. */
function ranAgain(where: Where, reran: readonly string[]): string {
  if (where.call !== null && where.position === "before") {
    return `: the host call ${where.call} ran and its outcome was not yet written, so the program's replay ran it again with the same ctx.callId — make the host module idempotent by ctx.callId`;
  }
  return reran.length > 0
    ? `: ${names(reran)} ran again without being idempotent (use the step's idempotencyKey)`
    : "";
}

/** What "settles the same" compares: the state and the result or error code. */
function settledView(snapshot: TaskRunSnapshot): unknown {
  if (snapshot.state === "completed") return { state: "completed", result: snapshot.result };
  if (snapshot.state === "failed") {
    return { state: "failed", code: snapshot.error.code ?? null, message: snapshot.error.message };
  }
  return { state: snapshot.state };
}

/** JSON with object keys sorted, so equal values compare equal as text. */
export function stable(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Map) return { $map: [...v.entries()] };
    if (v instanceof Set) return { $set: [...v.values()] };
    if (typeof v === "bigint") return { $bigint: v.toString() };
    if (v === undefined) return { $undefined: true };
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)),
      );
    }
    return v;
  });
}

export const SETTLED = new Set(["completed", "failed", "cancelled"]);

/** `runInDurableObject` over an object whose class the caller names (`Instance`). */
export function inObject<Instance, R>(
  stub: DurableObjectStub,
  fn: (instance: Instance, state: DurableObjectState) => R | Promise<R>,
): Promise<R> {
  return runInDurableObject(stub, (instance: DurableObject, state) =>
    fn(instance as unknown as Instance, state),
  );
}

/** Starts, drives and reads runs in objects under test, on the probe's clock. */
class RunDriver<Instance extends Rpc.DurableObjectBranded | undefined> {
  readonly #options: TestingCrashOptions<Instance>;
  readonly #maxWakes: number;
  readonly #runningMs: number;

  constructor(options: TestingCrashOptions<Instance>, maxWakes: number, runningMs: number) {
    this.#options = options;
    this.#maxWakes = maxWakes;
    this.#runningMs = runningMs;
  }

  async start(stub: DurableObjectStub): Promise<string> {
    const started = await inObject(stub, (instance: Instance) => this.#options.start(instance));
    const runId = typeof started === "string" ? started : started?.runId;
    if (typeof runId !== "string") {
      throw new TestingError(
        "testing/not-found",
        "crashEverywhere: start(instance) must return the run id (or tasks.run's receipt).",
      );
    }
    return runId;
  }

  /** Drives the run until the armed crash fires (true) or the run settles without it (false). */
  async untilCrash(stub: DurableObjectStub, runId: string): Promise<boolean> {
    return (await this.#drive(stub, runId, true)) === "crashed";
  }

  /**
   * Drives the run until it settles; its snapshot and what the checks read, or null. After a reset
   * (`recover`) the clock first moves to the object's alarm: the claim deadline of the attempt the
   * reset killed.
   */
  async settle(
    stub: DurableObjectStub,
    runId: string,
    recover = false,
    trace: AttemptTrace[] | null = null,
  ): Promise<Settled | null> {
    if (recover) await this.#nextAlarm(stub);
    if ((await this.#drive(stub, runId, false, trace)) !== "settled") return null;
    const { effects, streams } = this.#options;
    return inObject(stub, async (instance: Instance, state) => {
      const tasks = this.#options.tasks(instance);
      return {
        snapshot: tasks.get(runId) as TaskRunSnapshot,
        bodies: new ProbeStore(state.storage).bodies(runId),
        effects: effects === undefined ? undefined : stable(await effects(instance, runId)),
        streams: streams === undefined ? undefined : await streams(instance, runId),
        facts: { runId, steps: typeof tasks.steps === "function" ? tasks.steps(runId) : null },
      };
    });
  }

  /**
   * Drives the run. With `trace`, notes the run's effects and step bodies each time an attempt has
   * parked or settled (the uninterrupted run: what each attempt did).
   */
  async #drive(
    stub: DurableObjectStub,
    runId: string,
    untilCrash: boolean,
    trace: AttemptTrace[] | null = null,
  ): Promise<"crashed" | "settled" | "stuck"> {
    const { events = {}, tasks } = this.#options;
    let runningSince = Date.now();
    for (let wakes = 0; wakes < this.#maxWakes; ) {
      if (untilCrash && abortSignalled(stub.id.toString())) return "crashed";
      const seen = await this.#poll(stub, untilCrash, async (instance: Instance, state) => {
        if (untilCrash && new ProbeStore(state.storage).hit()) return { crashed: true } as const;
        const snapshot = tasks(instance).get(runId);
        if (snapshot === null) {
          throw new TestingError(
            "testing/not-found",
            `crashEverywhere: no run "${runId}" in the object.`,
          );
        }
        if (
          snapshot.state === "waiting" &&
          snapshot.reason === "event" &&
          snapshot.eventType !== undefined &&
          Object.hasOwn(events, snapshot.eventType)
        ) {
          await tasks(instance).sendEvent(runId, snapshot.eventType, events[snapshot.eventType]);
          return { state: "delivered" } as const;
        }
        if (
          trace !== null &&
          snapshot.state !== "running" &&
          snapshot.state !== "pending" &&
          trace.at(-1)?.attempt !== snapshot.attempt
        ) {
          const { effects } = this.#options;
          trace.push({
            attempt: snapshot.attempt,
            reason: snapshot.state === "waiting" ? snapshot.reason : null,
            effects:
              effects === undefined
                ? undefined
                : JSON.parse(stable(await effects(instance, runId)) ?? "null"),
            bodies: new Map(
              new ProbeStore(state.storage).bodies(runId).map((b) => [b.step, b.runs]),
            ),
          });
        }
        return {
          state: snapshot.state,
          wakeAt: snapshot.state === "waiting" ? snapshot.wakeAt : 0,
        };
      });
      if (seen === null || "crashed" in seen) return "crashed";
      if (SETTLED.has(seen.state)) return "settled";
      if (seen.state === "delivered") {
        wakes++;
        runningSince = Date.now();
        continue;
      }
      if (seen.state === "waiting" && seen.wakeAt === null) return "stuck";
      // A live attempt is at work: give it a moment, then move the clock to its claim deadline
      // (the backstop that recovers an attempt whose object was reset).
      if (seen.state === "running" && Date.now() - runningSince < this.#runningMs) {
        await scheduler.wait(1);
        continue;
      }
      await this.#nextAlarm(stub, untilCrash);
      wakes++;
      runningSince = Date.now();
    }
    return "stuck";
  }

  /**
   * Moves the probe's clock to the object's alarm and runs it. While a crash is armed, returns as
   * soon as it fires: the attempt the alarm started is stopped there, and the alarm would wait for
   * it (`Tasks.alarm()` waits up to 10 s for its attempts) until the reset cuts it.
   */
  async #nextAlarm(stub: DurableObjectStub, untilCrash = false): Promise<void> {
    await runInDurableObject(stub, async (_instance, state) => {
      const at = await state.storage.getAlarm();
      if (at === null) return;
      const store = new ProbeStore(state.storage);
      store.moveTo(at);
      clockMoved(state.id.toString(), store.now());
    });
    let done = false;
    // After the reset the alarm's invocation fails with the abort: that is the crash, not an error.
    const alarm = runDurableObjectAlarm(stub).then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    if (!untilCrash) return alarm;
    while (!done) {
      const hit = await this.#poll(stub, true, (_instance, state) =>
        new ProbeStore(state.storage).hit(),
      );
      if (hit !== false) return;
      await scheduler.wait(1);
    }
  }

  /**
   * Reads the object; `null` when the probe aborted it (a crash inside a journal write), which
   * breaks the stub's calls until the test reaches the object anew.
   */
  async #poll<R>(
    stub: DurableObjectStub,
    untilCrash: boolean,
    fn: (instance: Instance, state: DurableObjectState) => R | Promise<R>,
  ): Promise<R | null> {
    try {
      return await inObject(stub, fn);
    } catch (error) {
      if (untilCrash && abortSignalled(stub.id.toString())) return null;
      throw error;
    }
  }
}
