import {
  CHILD_MESSAGE_VERSION,
  type ChildMessage,
  type ObjectAddress,
  readChildMessage,
  type SettledMessage,
  type StartMessage,
  type TaskChildReply,
} from "./child-messages";
import type { ChildRow } from "./child-store";
import { isTasksError, NonRetryableError, TasksError } from "./errors";
import type { TaskErrorInfo } from "./events";
import { TERMINAL_STATES } from "./rows";
import type { TaskStore } from "./store";
import { decodeValue, encodeValue, errorInfo } from "./values";

/** Where a child run is started: a namespace binding and the object's name (or its id). */
export type TaskChildTarget = { binding: string; name: string } | { binding: string; id: string };

/** A child run a step started (`step.startChild`): plain data, journaled with the step. */
export interface TaskChildRun {
  runId: string;
  /** The parent's step that started it. */
  step: string;
  /** The object it runs in. */
  target: { binding: string; id: string };
}

/** How a child run stands, as `step.awaitChildren` reports it. */
export type TaskChildOutcome =
  | { runId: string; state: "completed"; result: unknown }
  | { runId: string; state: "failed" | "cancelled"; error: TaskErrorInfo }
  /** Not settled when the await was answered (it awaited fewer than all, or timed out). */
  | { runId: string; state: "running" };

/** A child run as its parent's object knows it (`tasks.children(runId)`). */
export interface TaskChildSnapshot {
  runId: string;
  /** The parent's step that started it. */
  step: string;
  /** Its object; null when its settlement arrived before the start's answer was noted. */
  target: { binding: string; id: string } | null;
  state: "running" | "completed" | "failed" | "cancelled";
  /** When its settlement arrived (epoch ms), or null while it runs. */
  settledAt: number | null;
}

/** Options of `new Tasks(ctx, { children })`: how this object reaches the objects of child runs and parents. */
export interface TaskChildrenOptions {
  /**
   * The Durable Object namespaces child runs live in, and parents answer through, by binding name:
   * pass the Worker's `env`. A child target names one of them.
   */
  namespaces: object;
  /** The binding this object's own class is bound as in `namespaces`: how its children reach it. */
  self: string;
  /**
   * How long a message to another object (a settlement for a parent, a cancel for a child) is
   * retried before it is dropped, in milliseconds (604800000: 7 days).
   */
  deliveryTimeoutMs?: number;
}

/** The RPC method an object exposes for child runs: `receiveTasks(message) { return this.tasks.receive(message); }`. */
export interface TaskChildEndpoint {
  receiveTasks(message: unknown): Promise<unknown>;
}

/** Event type of the waits of `awaitChildren` (reserved: `sendEvent` refuses the prefix). */
export const CHILDREN_EVENT = "__dk:children";

/** Most child runs one `awaitChildren` step may await. */
export const MAX_AWAITED_CHILDREN = 10_000;

/** Default of `deliveryTimeoutMs`: 7 days. */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;

/** Messages one alarm delivers at most (the rest stay due: the alarm comes back at once). */
const DELIVERIES_PER_ALARM = 256;

/** How long an alarm waits for its deliveries (10 s, as it waits for the attempts it started). */
const DELIVERY_WAIT_MS = 10_000;

/** The back-off of a failed delivery: 1 s, doubling, at most 5 minutes. */
function retryDelayMs(attempts: number): number {
  return Math.min(1000 * 2 ** Math.min(attempts - 1, 16), 300_000);
}

/** What child runs need of the engine around them. */
export interface ChildRunsHost {
  store: TaskStore;
  ctx: DurableObjectState;
  maxValueBytes: number;
  now(): number;
  requestWake(at: number): void;
  /** Starts an attempt of a run that became due, in this invocation (nothing when one is running). */
  startRun(runId: string, now: number): void;
  /** `tasks.run()` with the child's idempotency key, linking the run to its parent before its first attempt; answers its run id. */
  accept(message: StartMessage, input: unknown, link: (runId: string) => void): Promise<string>;
  cancel(runId: string, reason: string): Promise<boolean>;
}

function refused(error: unknown): TaskChildReply {
  const code = isTasksError(error) ? error.code : "tasks/invalid-argument";
  const message = error instanceof Error ? error.message : String(error);
  return { v: 1, ok: false, code, message };
}

/**
 * Runs across objects (DESIGN.md, "Child runs"): a parent run starts child runs in other objects
 * (`startChild`, exactly once per step through the child's idempotency key `<parent run>:<step>`),
 * each child owes its parent its settlement (queued in the child's outbox in the transaction that
 * settles it, delivered by the alarm with back-off until the parent acknowledges it), the parent
 * applies each settlement once (by child run id) and wakes an `awaitChildren` step when its
 * countdown reaches zero; a parent that settles owes each running child a cancel, delivered the
 * same way. No coordinator: Durable Object stubs, RPC, each object's SQLite and its alarm.
 */
export class ChildRuns {
  readonly #host: ChildRunsHost;
  readonly #namespaces: Readonly<Record<string, unknown>>;
  readonly #self: ObjectAddress;
  readonly #deliveryTimeoutMs: number;

  constructor(host: ChildRunsHost, options: TaskChildrenOptions, deliveryTimeoutMs: number) {
    this.#host = host;
    this.#namespaces = options.namespaces as Readonly<Record<string, unknown>>;
    this.#self = { binding: options.self, id: host.ctx.id.toString() };
    this.#deliveryTimeoutMs = deliveryTimeoutMs;
    this.#namespace(options.self, "children.self");
  }

  // ── Addresses ──

  #namespace(binding: string, what: string): DurableObjectNamespace {
    const ns = Object.hasOwn(this.#namespaces, binding) ? this.#namespaces[binding] : undefined;
    if (
      typeof ns !== "object" ||
      ns === null ||
      typeof (ns as DurableObjectNamespace).idFromString !== "function"
    ) {
      throw new TasksError(
        "tasks/invalid-argument",
        `${what} "${binding}" is not a Durable Object namespace in children.namespaces; bind it in wrangler.jsonc and pass env.`,
      );
    }
    return ns as DurableObjectNamespace;
  }

  /** The address of a target: its namespace checked, its name turned into an id. */
  address(target: TaskChildTarget): ObjectAddress {
    if (typeof target !== "object" || target === null || typeof target.binding !== "string") {
      throw new TasksError(
        "tasks/invalid-argument",
        "A child target is { binding, name } or { binding, id }: a namespace binding in children.namespaces and the object's name or id.",
      );
    }
    const ns = this.#namespace(target.binding, "The child target's binding");
    if ("id" in target && typeof target.id === "string") {
      return { binding: target.binding, id: ns.idFromString(target.id).toString() };
    }
    if ("name" in target && typeof target.name === "string" && target.name.length > 0) {
      return { binding: target.binding, id: ns.idFromName(target.name).toString() };
    }
    throw new TasksError(
      "tasks/invalid-argument",
      "A child target needs the object's name (a non-empty string) or its id.",
    );
  }

  #endpoint(address: ObjectAddress): TaskChildEndpoint {
    const ns = this.#namespace(address.binding, "The binding");
    return ns.get(ns.idFromString(address.id)) as unknown as TaskChildEndpoint;
  }

  // ── The parent's side ──

  /**
   * Starts child run `<parentRunId>:<step>` of `definition` in `target` (the body of a
   * `startChild` step: a retry joins the same run) and notes it among the parent's children.
   * @throws NonRetryableError when the child's object refuses the start (its message and code);
   *   what the RPC throws (the step retries it).
   */
  async start(
    parentRunId: string,
    step: string,
    target: TaskChildTarget,
    definition: string,
    input: unknown,
  ): Promise<TaskChildRun> {
    const address = this.address(target);
    const message: StartMessage = {
      v: CHILD_MESSAGE_VERSION,
      kind: "start",
      key: `${parentRunId}:${step}`,
      definition,
      input: encodeValue(input, this.#host.maxValueBytes, `step "${step}" child input`),
      parent: this.#self,
      parentRunId,
    };
    const reply = (await this.#endpoint(address).receiveTasks(message)) as
      | TaskChildReply
      | undefined;
    if (reply?.ok !== true || typeof (reply as { runId?: unknown }).runId !== "string") {
      const why =
        reply?.ok === false ? `${reply.message} (${reply.code})` : "it answered no run id";
      throw new NonRetryableError(
        `Object ${address.binding}/${address.id} did not start child run "${message.key}" of "${definition}": ${why}.`,
      );
    }
    const runId = (reply as { runId: string }).runId;
    const store = this.#host.store;
    const parent = store.runs.getRun(parentRunId);
    if (parent === undefined || TERMINAL_STATES.has(parent.state)) {
      // The parent settled while the start was on its way (a cancel, say): the child it just
      // started would outlive it. It gets the cancel the parent's settlement would have queued.
      const now = this.#host.now();
      store.outbox.enqueue(
        `cancel:${runId}`,
        JSON.stringify(address),
        {
          v: 1,
          kind: "cancel",
          key: message.key,
          childRunId: runId,
          reason: `its parent run "${parentRunId}" settled while it was being started`,
        },
        now,
      );
      this.#host.requestWake(now);
    } else {
      store.children.started(parentRunId, runId, step, address);
    }
    return { runId, step, target: address };
  }

  /**
   * Refuses a list a wait could never finish: a child named twice, or a run this run did not
   * start (its settlement would never come here).
   * @throws TasksError `tasks/invalid-argument`.
   */
  checkAwaitable(parentRunId: string, runs: readonly TaskChildRun[], what: string): void {
    const ids = runs.map((run) => run.runId);
    if (new Set(ids).size !== ids.length) {
      throw new TasksError("tasks/invalid-argument", `${what} names a child run twice.`);
    }
    const rows = this.#host.store.children.rows(parentRunId, ids);
    const foreign = ids.find((id) => !rows.has(id));
    if (foreign !== undefined) {
      throw new TasksError(
        "tasks/invalid-argument",
        `${what} names run "${foreign}", which is not a child run this run started with step.startChild.`,
      );
    }
  }

  /** Positions in `runs` of the children already settled. */
  settledPositions(parentRunId: string, runs: readonly TaskChildRun[]): number[] {
    const rows = this.#host.store.children.rows(
      parentRunId,
      runs.map((run) => run.runId),
    );
    const settled: number[] = [];
    for (let i = 0; i < runs.length; i++) {
      const row = rows.get((runs[i] as TaskChildRun).runId);
      if (row !== undefined && row.state !== "running") settled.push(i);
    }
    return settled;
  }

  /** The outcomes of `runs`: settled at `positions` (all of them when null), running otherwise. */
  outcomes(
    parentRunId: string,
    runs: readonly TaskChildRun[],
    positions: readonly number[] | null,
  ): TaskChildOutcome[] {
    const rows = this.#host.store.children.rows(
      parentRunId,
      runs.map((run) => run.runId),
    );
    const settled = positions === null ? null : new Set(positions);
    return runs.map((run, i) => {
      const row = rows.get(run.runId);
      if (row === undefined || row.state === "running" || (settled !== null && !settled.has(i))) {
        return { runId: run.runId, state: "running" };
      }
      return outcomeOf(run.runId, row);
    });
  }

  /** A parked `awaitChildren` step waits for `remaining` more of `runs`. */
  registerWait(
    parentRunId: string,
    step: string,
    runs: readonly TaskChildRun[],
    remaining: number,
  ): void {
    this.#host.store.children.registerWait(
      parentRunId,
      step,
      runs.map((run) => run.runId),
      remaining,
    );
  }

  /** The step's wait was answered. */
  clearWait(parentRunId: string, step: string): void {
    this.#host.store.children.deleteWait(parentRunId, step);
  }

  // ── Receiving (the RPC entry) ──

  /** Applies a message another object's Tasks sent (see `Tasks.receive`). */
  async receive(message: unknown): Promise<TaskChildReply> {
    let m: ChildMessage;
    try {
      m = readChildMessage(message);
    } catch (error) {
      return refused(error);
    }
    try {
      if (m.kind === "start") return await this.#receiveStart(m);
      if (m.kind === "settled") return this.#receiveSettled(m);
      const host = this.#host;
      const row = host.store.runs.getRun(m.childRunId);
      if (row === undefined) return { v: 1, ok: true, gone: true };
      if (row.idempotency_key !== m.key) {
        return refused(
          new TasksError(
            "tasks/conflict",
            `Run "${m.childRunId}" is not the child run "${m.key}"; a parent cancels only its own children.`,
          ),
        );
      }
      await host.cancel(m.childRunId, m.reason);
      return { v: 1, ok: true };
    } catch (error) {
      return refused(error);
    }
  }

  async #receiveStart(m: StartMessage): Promise<TaskChildReply> {
    const host = this.#host;
    const input = decodeValue(m.input);
    const runId = await host.accept(m, input, (childRunId) =>
      host.store.outbox.link(childRunId, m.parent, m.parentRunId, m.key),
    );
    return { v: 1, ok: true, runId };
  }

  /**
   * A child's settlement: applied once (a duplicate is acknowledged and changes nothing); when it
   * ends the countdown of the step waiting for it, the parent run becomes due and starts.
   */
  #receiveSettled(m: SettledMessage): TaskChildReply {
    const host = this.#host;
    const prefix = `${m.parentRunId}:`;
    if (!m.key.startsWith(prefix) || m.key.length === prefix.length) {
      return refused(
        new TasksError(
          "tasks/invalid-argument",
          `Child key "${m.key}" does not belong to run "${m.parentRunId}".`,
        ),
      );
    }
    const parent = host.store.runs.getRun(m.parentRunId);
    if (parent === undefined || TERMINAL_STATES.has(parent.state)) {
      return { v: 1, ok: true, gone: true };
    }
    const now = host.now();
    const step = m.key.slice(prefix.length);
    let applied = false;
    const woke = host.store.transaction(() => {
      const settled = host.store.children.settle(
        m.parentRunId,
        m.childRunId,
        step,
        m.state,
        m.result,
        m.error,
        now,
      );
      applied = settled.applied;
      const waitStep = settled.waitStep;
      if (!applied || waitStep === null) return false;
      const remaining = host.store.children.countDown(m.parentRunId, waitStep);
      if (remaining === null || remaining > 0) return false;
      return host.store.runs.wakeForEvent(m.parentRunId, waitStep, now);
    });
    if (woke) {
      host.requestWake(now);
      host.startRun(m.parentRunId, now);
    }
    return { v: 1, ok: true, applied };
  }

  // ── Delivering (the alarm's share) ──

  /** The earliest time a message is owed, or null. */
  nextWakeAt(): number | null {
    return this.#host.store.outbox.nextAt();
  }

  /**
   * Delivers the messages that are due, at once. Each is first rescheduled after its back-off (a
   * lease written, with its wake, before the message leaves): an object that dies in the middle of
   * a delivery finds it due again. An acknowledged one is deleted; one older than
   * `deliveryTimeoutMs` is dropped.
   */
  async deliverDue(): Promise<void> {
    const host = this.#host;
    const now = host.now();
    const due = host.store.outbox.due(now, DELIVERIES_PER_ALARM);
    const all = Promise.all(
      due.map(async (row) => {
        if (now - row.created_at >= this.#deliveryTimeoutMs) {
          host.store.outbox.delete(row.id);
          console.warn(
            `@durablekit/tasks: dropped message ${row.id} after ${row.attempts} failed deliveries over deliveryTimeoutMs (${this.#deliveryTimeoutMs} ms); its receiver never acknowledged it.`,
          );
          return;
        }
        const attempts = row.attempts + 1;
        const retryAt = now + retryDelayMs(attempts);
        host.store.outbox.retryAt(row.id, attempts, retryAt);
        host.requestWake(retryAt);
        let delivered = false;
        try {
          const endpoint = this.#endpoint(JSON.parse(row.target) as ObjectAddress);
          const reply = (await endpoint.receiveTasks(JSON.parse(row.message))) as
            | TaskChildReply
            | undefined;
          delivered = reply?.ok === true;
        } catch {
          delivered = false;
        }
        if (delivered) host.store.outbox.delete(row.id);
      }),
    );
    // A receiver that hangs must not hold the object's alarm: its message is leased, so it is
    // delivered again after its back-off whatever this wait decides.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      all,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, DELIVERY_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (due.length === DELIVERIES_PER_ALARM) host.requestWake(host.now());
  }
}

function outcomeOf(runId: string, row: ChildRow): TaskChildOutcome {
  if (row.state === "completed") {
    return { runId, state: "completed", result: decodeValue(row.result) };
  }
  return {
    runId,
    state: row.state === "failed" ? "failed" : "cancelled",
    error: errorInfo(row.error),
  };
}
