import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import type { TaskRunSnapshot, Tasks } from "@durablekit/tasks";
import { check } from "./arguments";
import {
  checkCrash,
  inObject,
  SETTLED,
  type Settled,
  stable,
  type TestingCrashProblem,
} from "./crash";
import { abortSignalled } from "./crash-signal";
import { TestingError } from "./errors";
import {
  armChild,
  armMessage,
  busy,
  clearBusy,
  firedMessageFaults,
  type TestingMessageFault,
} from "./fan-out-signal";
import { clearTimers, clockMoved } from "./handler-clock";
import { ProbeStore, type TestingBoundary, type TestingCrashPosition } from "./probe-store";

/** The object of a fan-out that runs the parent run. */
const PARENT = "parent";

/** Options of {@link crashFanOut}. */
export interface TestingFanOutOptions<
  Parent extends Rpc.DurableObjectBranded | undefined,
  Child extends Rpc.DurableObjectBranded | undefined = Parent,
> {
  /**
   * The namespace of the parent's object (`env.ORDERS`): each run gets a fresh object of it. Every
   * object of the fan-out constructs a `TestingProbe`, gives its parts `now: probe.now` and its
   * `Tasks` `probe.instrument(definitions)`, and routes its RPC entry through the probe:
   * `receiveTasks(m) { return this.probe.receive(m, (x) => this.tasks.receive(x)); }`.
   */
  namespace: DurableObjectNamespace<Parent>;
  /**
   * The namespaces children live in, by binding (`env`, as the `Tasks`' `children.namespaces`):
   * the driver reaches each object a run starts a child in through the target it named.
   */
  namespaces: object;
  /** The parent object's `Tasks` part. */
  tasks: (instance: Parent) => Pick<Tasks, "get" | "sendEvent">;
  /**
   * Starts the parent run inside its object; returns its run id (or `tasks.run`'s receipt). Name
   * the child objects afresh on every call (a counter in their names): each run gets new objects.
   */
  start: (instance: Parent) => Promise<string | { runId: string }> | string | { runId: string };
  /**
   * What the fan-out did outside its journals, as JSON, read from the parent object (`parent`) and
   * from each child object (`children`): compared with the uninterrupted run's after every crash
   * and every fault. Run ids in them are compared by the start that made them.
   */
  effects?: {
    parent?: (instance: Parent, runId: string) => unknown;
    children?: (instance: Child) => unknown;
  };
  /** Event payloads by type: sent when the parent run waits for an event of that type. */
  events?: Record<string, unknown>;
  /** Which sides of each boundary to crash on (both). */
  positions?: readonly TestingCrashPosition[];
  /** What to do to each message, once per message and fault (all three). */
  faults?: readonly TestingMessageFault[];
  /** Most wakes (alarm rounds and events) one run may take to settle with nothing owed (1,000). */
  maxWakes?: number;
  /** How long attempts may keep running without a wake before the clocks move to the next alarm (2,000 ms). */
  runningMs?: number;
}

/** A crash at a boundary of one object's runs, or a fault of one message. */
export interface TestingFanOutCase {
  /**
   * Where: `parent`, or a child object named by the start that reached it (`start 0#0`: the
   * parent's step `start 0`, child 0 of it).
   */
  object: string;
  /** The boundary's label (`do:charge`), or the message's (`settled:start 0#0`). */
  boundary: string;
  /** The boundary's index in its object's order of boundaries (for a message, in the fan-out's order of messages). */
  index: number;
  /** The side of the boundary, or what was done to the message. */
  position: TestingCrashPosition | TestingMessageFault;
  /** Steps (`<object>/<step>`) whose body ran more often than in the uninterrupted run. */
  reran: string[];
  /** For a message fault: the probe met the message and did it (false: the message never came). */
  fired: boolean;
  ok: boolean;
}

/** A check that failed after one crash or message fault. */
export interface TestingFanOutProblem
  extends Omit<TestingCrashProblem, "position">,
    Pick<TestingFanOutCase, "object" | "position"> {}

/** A message of the fan-out, learned from the uninterrupted run. */
export interface TestingFanOutMessage {
  /** `start:<step>#<index>`, `settled:<step>#<index>` or `cancel:<step>#<index>` (the parent's step). */
  label: string;
  /** The object that received it. */
  object: string;
}

/** The report of {@link crashFanOut}. */
export interface TestingFanOutReport {
  /** True when every crash and fault passed every check. */
  ok: boolean;
  /** Every object's durable boundaries, learned from the uninterrupted run, by object. */
  boundaries: Record<string, TestingBoundary[]>;
  /** The messages objects exchanged in the uninterrupted run. */
  messages: TestingFanOutMessage[];
  /** The uninterrupted parent run's settled snapshot. */
  baseline: TaskRunSnapshot;
  /** Every crash and fault explored, in order. */
  cases: TestingFanOutCase[];
  problems: TestingFanOutProblem[];
  /** Wall time of the whole exploration, in milliseconds. */
  ms: number;
}

/** One object of a fan-out the driver reaches. */
interface FanObject {
  stub: () => DurableObjectStub;
  id: string;
  /** `parent`, or the start labels (without `start:`) of the children it holds. */
  role: string;
}

/**
 * Proves a fan-out of child runs exactly-once as {@link crashEverywhere} proves one object's run.
 * It runs the parent run once, driving every object it reaches (each object's alarm, each probe's
 * clock) until the parent settles and no object owes another a message, to learn each object's
 * durable boundaries and the messages they exchange. Then, in fresh objects each time, it resets
 * every object (`abortAllDurableObjects()`) right before and right after each boundary of the
 * parent and of each child object, and — with no reset — loses each message once (`lose`: the
 * receiver throws before applying it), loses its reply once (`lose-reply`: applied, then the
 * sender hears an error and delivers it again) and delivers it twice (`duplicate`). After each it
 * drives the fan-out until it settles and checks what `crashEverywhere` checks — the parent's
 * result, no step body run after its result was recorded, `effects` of the parent and of each
 * child object — naming the object, the boundary or message, and the steps that ran again.
 *
 * Deterministic: the clocks move only to the next alarm once every attempt and every message in
 * flight is done. Resets every object of the test's Worker: run it in a test of its own.
 *
 * @throws TestingError `testing/invalid-argument` for bad options; `testing/not-found` when `start`
 *   returns no run id; `testing/unsettled` when the uninterrupted fan-out does not settle.
 */
export async function crashFanOut<
  Parent extends Rpc.DurableObjectBranded | undefined,
  Child extends Rpc.DurableObjectBranded | undefined = Parent,
>(options: TestingFanOutOptions<Parent, Child>): Promise<TestingFanOutReport> {
  check.options(options, "crashFanOut(options)");
  if (typeof options.namespace?.getByName !== "function") {
    throw new TestingError(
      "testing/invalid-argument",
      "crashFanOut(options): namespace must be a Durable Object namespace binding (env.MY_OBJECT).",
    );
  }
  check.options(options.namespaces, "crashFanOut(options): namespaces");
  for (const name of ["tasks", "start"] as const) {
    if (typeof options[name] !== "function") {
      throw new TestingError(
        "testing/invalid-argument",
        `crashFanOut(options): ${name} must be a function.`,
      );
    }
  }
  if (options.effects !== undefined) {
    check.options(options.effects, "crashFanOut(options): effects");
    check.callback(options.effects.parent, "effects.parent");
    check.callback(options.effects.children, "effects.children");
  }
  const maxWakes = check.count(options.maxWakes, "maxWakes", 1_000);
  const runningMs = check.ms(options.runningMs, "runningMs", 2_000);
  const positions = options.positions ?? (["before", "after"] as const);
  const faults = options.faults ?? (["lose", "lose-reply", "duplicate"] as const);
  const started = Date.now();

  // ── The uninterrupted fan-out: every object's boundaries, the messages, what it settles to ──
  armChild(null);
  armMessage(null);
  const first = new FanOut(options, maxWakes, runningMs);
  const firstRun = await first.start(null);
  if ((await first.drive(false)) !== "settled") {
    throw new TestingError(
      "testing/unsettled",
      `crashFanOut: the uninterrupted fan-out of run "${firstRun}" did not settle with nothing owed within ${maxWakes} wakes; pass events for the events it waits for.`,
    );
  }
  const baseline = await first.outcome();
  const boundaries: Record<string, TestingBoundary[]> = {};
  const messages: TestingFanOutMessage[] = [];
  for (const object of first.objects()) {
    const seen = await inObject(object.stub(), (_instance: unknown, state) => {
      const store = new ProbeStore(state.storage);
      const runs = object.role === PARENT ? [firstRun] : runsOf(store);
      return {
        boundaries: runs.flatMap((runId) => store.boundaries(runId)),
        messages: store.messages(),
      };
    });
    boundaries[object.role] = seen.boundaries.map((b, index) => ({ ...b, index }));
    for (const m of seen.messages) messages.push({ label: m.label, object: object.role });
  }
  const runsBefore = new Map(baseline.bodies.map((b) => [b.step, b.runs]));

  // ── One crash per boundary and side of every object, one fault per message ──
  const cases: TestingFanOutCase[] = [];
  const problems: TestingFanOutProblem[] = [];
  const explore = async (
    where: {
      object: string;
      boundary: string;
      index: number;
      position: TestingFanOutCase["position"];
    },
    call: string | null,
    arm: (fanOut: FanOut<Parent, Child>) => Promise<void>,
    crash: boolean,
  ) => {
    const fanOut = new FanOut(options, maxWakes, runningMs);
    await fanOut.start(arm);
    let reached = true;
    if (crash) {
      reached = (await fanOut.drive(true)) === "crashed";
      armChild(null);
      if (reached) await fanOut.reset();
    }
    const settledNow = (await fanOut.drive(false)) === "settled";
    const outcome = settledNow ? await fanOut.outcome() : null;
    const fired = crash ? reached : firedMessageFaults().length > 0;
    armMessage(null);
    const reran = outcome
      ? outcome.bodies.filter((b) => b.runs > (runsBefore.get(b.step) ?? 0)).map((b) => b.step)
      : [];
    const what =
      typeof where.position === "string" &&
      (where.position === "before" || where.position === "after")
        ? `a crash ${where.position} ${where.boundary} in ${where.object}`
        : `${where.position === "lose" ? "losing" : where.position === "lose-reply" ? "losing the reply to" : "delivering twice"} ${where.boundary}`;
    const found = checkCrash({ ...where, call }, fired, baseline, outcome, reran, maxWakes, what);
    problems.push(...found);
    cases.push({ ...where, reran, fired, ok: found.length === 0 });
  };
  for (const [object, list] of Object.entries(boundaries)) {
    for (const boundary of list) {
      for (const position of positions) {
        if (boundary.kind === "settle" && position === "after") continue;
        const arm = { label: boundary.label, position, async: boundary.async };
        await explore(
          { object, boundary: boundary.label, index: boundary.index, position },
          boundary.call,
          async (fanOut) => {
            if (object === PARENT) await fanOut.armParent(arm);
            else armChild({ ...arm, start: `start:${object.split(",")[0]}` });
          },
          true,
        );
      }
    }
  }
  for (const [index, message] of messages.entries()) {
    for (const fault of faults) {
      await explore(
        { object: message.object, boundary: message.label, index, position: fault },
        null,
        async () => armMessage({ label: message.label, fault }),
        false,
      );
    }
  }
  return {
    ok: problems.length === 0,
    boundaries,
    messages,
    baseline: baseline.snapshot,
    cases,
    problems,
    ms: Date.now() - started,
  };
}

/** The child runs a start created in an object, as its probe noted them. */
function runsOf(store: ProbeStore): string[] {
  return store
    .messages()
    .filter((m) => m.kind === "start" && m.runId !== null)
    .map((m) => m.runId as string);
}

/** Messages still owed to other objects (`dk_tasks_outbox`; 0 in an object without child runs). */
function owed(storage: DurableObjectStorage): number {
  const table = storage.sql
    .exec("SELECT name FROM sqlite_master WHERE name = 'dk_tasks_outbox'")
    .toArray();
  if (table.length === 0) return 0;
  return storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_outbox").one().n;
}

/** One fan-out under test: its parent run, the objects it reached, and the driving of them. */
class FanOut<
  Parent extends Rpc.DurableObjectBranded | undefined,
  Child extends Rpc.DurableObjectBranded | undefined,
> {
  readonly #options: TestingFanOutOptions<Parent, Child>;
  readonly #maxWakes: number;
  readonly #runningMs: number;
  readonly #parentName = `crash-fan-out-${crypto.randomUUID()}`;
  /** Every object reached, by id: the parent first, then children as the runs name them. */
  readonly #objects = new Map<string, FanObject>();
  /** Alarms invoked and not finished (their attempts and deliveries are at work). */
  #alarms = 0;
  /** Bumped by a reset: alarms invoked before it no longer count. */
  #generation = 0;
  #runId = "";

  constructor(options: TestingFanOutOptions<Parent, Child>, maxWakes: number, runningMs: number) {
    this.#options = options;
    this.#maxWakes = maxWakes;
    this.#runningMs = runningMs;
    const ns = options.namespace;
    const id = ns.idFromName(this.#parentName).toString();
    this.#objects.set(id, {
      stub: () => ns.get(ns.idFromString(id)) as DurableObjectStub,
      id,
      role: PARENT,
    });
  }

  objects(): FanObject[] {
    return [...this.#objects.values()];
  }

  #parent(): FanObject {
    return this.#objects.values().next().value as FanObject;
  }

  async armParent(arm: Parameters<ProbeStore["arm"]>[0]): Promise<void> {
    await runInDurableObject(this.#parent().stub(), (_instance, state) =>
      new ProbeStore(state.storage).arm(arm),
    );
  }

  /** Arms (`arm`), then starts the parent run. */
  async start(arm: ((fanOut: this) => Promise<void>) | null): Promise<string> {
    clearBusy();
    if (arm !== null) await arm(this);
    const started = await inObject(this.#parent().stub(), (instance: Parent) =>
      this.#options.start(instance),
    );
    const runId = typeof started === "string" ? started : started?.runId;
    if (typeof runId !== "string") {
      throw new TestingError(
        "testing/not-found",
        "crashFanOut: start(instance) must return the run id (or tasks.run's receipt).",
      );
    }
    this.#runId = runId;
    return runId;
  }

  /** Resets every object (memory dropped, SQLite kept) and lets each recover on its next wake. */
  async reset(): Promise<void> {
    await abortAllDurableObjects();
    clearBusy();
    clearTimers();
    this.#alarms = 0;
    this.#generation++;
    // A crash the probe made itself (ctx.abort) could not write that it fired: disarm it here.
    for (const object of this.#objects.values()) {
      await runInDurableObject(object.stub(), (_instance, state) =>
        new ProbeStore(state.storage).markHit(),
      );
    }
  }

  /**
   * Drives the fan-out until the armed crash fires (`crashed`), or the parent run settles with
   * nothing owed (`settled`), or `maxWakes` pass (`stuck`). The clocks move to the next alarm of
   * any object only when nothing is at work; then every object whose alarm is due runs it.
   */
  async drive(untilCrash: boolean): Promise<"crashed" | "settled" | "stuck"> {
    const { events = {}, tasks } = this.#options;
    let since = Date.now();
    let quiet = 0;
    for (let wakes = 0; wakes < this.#maxWakes; ) {
      if (untilCrash && (await this.#hit())) return "crashed";
      await this.#discover();
      const working = busy() || this.#alarms > 0;
      if (working && Date.now() - since < this.#runningMs) {
        quiet = 0;
        await scheduler.wait(1);
        continue;
      }
      // A settlement leaves a moment after its turn ends: look a few times before moving time.
      if (!working && ++quiet < 3) {
        await scheduler.wait(1);
        continue;
      }
      quiet = 0;
      const parent = await this.#poll(this.#parent(), untilCrash, async (instance: Parent) => {
        const snapshot = tasks(instance).get(this.#runId);
        if (snapshot === null) {
          throw new TestingError(
            "testing/not-found",
            `crashFanOut: no run "${this.#runId}" in the parent object.`,
          );
        }
        if (
          snapshot.state === "waiting" &&
          snapshot.reason === "event" &&
          snapshot.eventType !== undefined &&
          Object.hasOwn(events, snapshot.eventType)
        ) {
          await tasks(instance).sendEvent(
            this.#runId,
            snapshot.eventType,
            events[snapshot.eventType],
          );
          return "delivered";
        }
        return snapshot.state;
      });
      if (parent === null) return "crashed";
      if (parent === "delivered") {
        wakes++;
        since = Date.now();
        continue;
      }
      let owes = 0;
      const alarms: Array<{ object: FanObject; at: number }> = [];
      for (const object of this.#objects.values()) {
        const seen = await this.#poll(object, untilCrash, async (_instance: unknown, state) => ({
          owed: owed(state.storage),
          at: await state.storage.getAlarm(),
        }));
        if (seen === null) return "crashed";
        owes += seen.owed;
        if (seen.at !== null) alarms.push({ object, at: seen.at });
      }
      if (SETTLED.has(parent) && owes === 0) return "settled";
      if (alarms.length === 0) return "stuck";
      const at = Math.min(...alarms.map((a) => a.at));
      // Every clock moves together, so the objects' deadlines keep their order.
      for (const object of this.#objects.values()) {
        await runInDurableObject(object.stub(), (_instance, state) => {
          const store = new ProbeStore(state.storage);
          store.moveTo(at);
          clockMoved(state.id.toString(), store.now());
        });
      }
      for (const { object, at: due } of alarms) {
        if (due > at) continue;
        this.#alarms++;
        const generation = this.#generation;
        // After a reset the alarm's invocation fails with the abort: that is the crash, not an error.
        runDurableObjectAlarm(object.stub())
          .catch(() => false)
          .finally(() => {
            if (generation === this.#generation) this.#alarms--;
          });
      }
      wakes++;
      since = Date.now();
    }
    return "stuck";
  }

  /** Whether the armed crash fired in any object. */
  async #hit(): Promise<boolean> {
    for (const object of this.#objects.values()) {
      if (abortSignalled(object.id)) return true;
      const hit = await this.#poll(object, true, (_instance: unknown, state) =>
        new ProbeStore(state.storage).hit(),
      );
      if (hit !== false) return true;
    }
    return false;
  }

  /** Adds the objects the reached objects' runs started children in. */
  async #discover(): Promise<void> {
    const namespaces = this.#options.namespaces as Record<string, unknown>;
    for (const object of [...this.#objects.values()]) {
      const targets = await this.#poll(object, false, (_instance: unknown, state) =>
        new ProbeStore(state.storage).targets(),
      );
      for (const text of targets ?? []) {
        const target = JSON.parse(text) as { binding?: string; name?: string; id?: string };
        const ns = Object.hasOwn(namespaces, target.binding ?? "")
          ? (namespaces[target.binding as string] as DurableObjectNamespace | undefined)
          : undefined;
        if (ns === undefined || typeof ns.idFromName !== "function") continue;
        let id: string;
        try {
          id = (
            typeof target.id === "string"
              ? ns.idFromString(target.id)
              : ns.idFromName(target.name ?? "")
          ).toString();
        } catch {
          continue; // the engine refuses that target itself
        }
        if (this.#objects.has(id)) continue;
        this.#objects.set(id, {
          stub: () => ns.get(ns.idFromString(id)) as DurableObjectStub,
          id,
          role: "",
        });
      }
    }
  }

  /** The parent's snapshot, what every step body ran, and the effects, with run ids by role. */
  async outcome(): Promise<Settled> {
    const renames: Array<[string, string]> = [[this.#runId, "<run:parent>"]];
    const bodies: Settled["bodies"] = [];
    const effects: Record<string, string> = {};
    let snapshot: unknown = null;
    for (const object of this.#objects.values()) {
      const seen = await inObject(object.stub(), async (instance: unknown, state) => {
        const store = new ProbeStore(state.storage);
        const starts = store.messages().filter((m) => m.kind === "start");
        const parent = object.role === PARENT;
        const read = parent ? this.#options.effects?.parent : this.#options.effects?.children;
        return {
          starts,
          bodies: store.bodies(parent ? this.#runId : null),
          snapshot: parent ? this.#options.tasks(instance as Parent).get(this.#runId) : null,
          effects:
            read === undefined
              ? undefined
              : stable(await (read as (i: unknown, r: string) => unknown)(instance, this.#runId)),
        };
      });
      if (object.role !== PARENT) {
        object.role = seen.starts.map((m) => m.label.slice("start:".length)).join(",") || "?";
      }
      for (const m of seen.starts) {
        if (m.runId !== null) renames.push([m.runId, `<run:${m.label.slice("start:".length)}>`]);
      }
      if (object.role === PARENT) snapshot = seen.snapshot;
      for (const b of seen.bodies) bodies.push({ ...b, step: `${object.role}/${b.step}` });
      if (seen.effects !== undefined) effects[object.role] = seen.effects;
    }
    const rename = (text: string) =>
      renames.reduce((out, [id, role]) => out.split(id).join(role), text);
    const read = this.#options.effects;
    return {
      snapshot: JSON.parse(rename(stable(snapshot))) as TaskRunSnapshot,
      bodies,
      effects: read === undefined ? undefined : rename(stable(effects)),
      streams: undefined,
    };
  }

  /**
   * Reads an object; `null` when a crash the probe made (`ctx.abort`) broke the call, or — outside
   * a crash — when the object cannot answer yet (it is being reset).
   */
  async #poll<I, R>(
    object: FanObject,
    untilCrash: boolean,
    fn: (instance: I, state: DurableObjectState) => R | Promise<R>,
  ): Promise<R | null> {
    try {
      return await inObject(object.stub(), fn);
    } catch (error) {
      if (untilCrash && abortSignalled(object.id)) return null;
      throw error;
    }
  }
}
