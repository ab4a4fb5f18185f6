import { utf8ByteLength } from "@durablekit/compose";
import { isErrorRecord } from "@durablekit/handle-journal";
import { isTasksError, NonRetryableError, TasksError } from "../errors";
import type { TaskEvent } from "../events";
import type { ChildRow } from "../store/child-store";
import { FIRST_LEASE_MS, retryDelayMs } from "../store/outbox-store";
import type { RunRow } from "../store/rows";
import { TERMINAL_STATES } from "../store/rows";
import type { TaskStore } from "../store/store";
import { decodeValue, encodeValue, errorInfo } from "../values";
import type { ChildStarter, ChildSteps, TaskChildSpec } from "./child-steps";
import {
  acknowledged,
  batchMessage,
  type CancelMessage,
  type ChildMessage,
  fromStored,
  GONE,
  MAX_BATCH_MESSAGES,
  newExchange,
  type ObjectAddress,
  provesSecret,
  readChildMessage,
  refusal,
  type SettledMessage,
  type StartMessage,
  settledId,
  startMessage,
  type TaskChildMessageReply,
  type TaskChildReply,
} from "./protocol";
import type {
  TaskChildEndpoint,
  TaskChildOutcome,
  TaskChildRun,
  TaskChildrenOptions,
  TaskChildTarget,
} from "./types";

/** Messages one alarm delivers at most (the rest stay due: the alarm comes back at once). */
const DELIVERIES_PER_ALARM = 1024;

/** Characters of payload one batch carries at most (a larger message travels alone). */
const BATCH_CHARS = 4 * 1024 * 1024;

/** Expired links one alarm deletes at most. */
const SWEEP_PER_ALARM = 1024;

/** How long an alarm waits for its deliveries (10 s, as it waits for the attempts it started). */
const DELIVERY_WAIT_MS = 10_000;

/**
 * Most microtask turns a `receive` waits for the attempts its starts began before it answers: a
 * child that runs without I/O ends well within them, and one that awaits I/O is not waited for.
 */
const SETTLE_TURNS = 64;

/** The reply to a start that named its child run. */
type StartAnswer = { v: 2; ok: true; runId: string; settled?: unknown };

/** A start answered by one `receive` call: its reply, its exchange, and the attempt it began. */
interface AnsweredStart {
  reply: StartAnswer;
  key: string;
  attempt: Promise<void> | null;
}

/** Resolves once `attempts` have all ended or {@link SETTLE_TURNS} microtask turns have passed. */
async function endedWithoutIo(attempts: readonly Promise<void>[]): Promise<void> {
  if (attempts.length === 0) return;
  let ended = false;
  Promise.allSettled(attempts).then(() => {
    ended = true;
  });
  for (let turn = 0; turn < SETTLE_TURNS && !ended; turn++) await null;
}

/** What child runs need of the engine around them. */
export interface ChildRunsHost {
  store: TaskStore;
  ctx: DurableObjectState;
  maxValueBytes: number;
  /** False when nobody listens to events: a dropped message is then also logged. */
  listening: boolean;
  now(): number;
  emit(event: TaskEvent): void;
  requestWake(at: number): void;
  /** Starts an attempt of a run that became due, in this invocation (nothing when one is running). */
  startRun(runId: string, now: number): void;
  /**
   * Accepts a new run of `definition` with `inputText`, codec text already checked (no idempotency
   * key: a child run is found by its exchange, never by a key a user could send), calling `link`
   * with its id in the accepting transaction, and starts its first attempt; synchronous (the
   * caller waits for the wakes it asked for).
   */
  accept(
    definition: string,
    inputText: string,
    link: (runId: string) => void,
  ): { runId: string; attempt: Promise<void> | null };
  cancel(runId: string, reason: string): Promise<boolean>;
}

/** The reply of a message refused because it failed its checks. */
function refusedBy(error: unknown): TaskChildMessageReply {
  const code = isTasksError(error) ? error.code : "tasks/invalid-argument";
  const message = error instanceof Error ? error.message : String(error);
  return refusal(code, message);
}

/** A refusal that says nothing of the exchange: the same for a wrong secret and a wrong child. */
function forbidden(kind: ChildMessage["kind"]): TaskChildMessageReply {
  return refusal(
    "tasks/forbidden",
    `This object holds no child-run exchange that this ${kind} message proves it belongs to; only the two objects of an exchange can send its messages.`,
  );
}

/**
 * Runs across objects (DESIGN.md, "Child runs"). A parent run records its intent to start a child
 * (the step, a random key and secret, the target) before the start leaves, so a start is joined by
 * every retry and a parent that settles cancels even a child whose start it never heard answered.
 * The child keeps its side of the exchange by key (its link, kept after it settles for late
 * retries), queues its settlement in the transaction that settles it, and the alarm delivers it,
 * batched per receiving object, with back-off until acknowledged. Every message carries the key
 * and secret and is checked before anything is stored: no object can start, settle or cancel an
 * exchange it is not part of. No coordinator: Durable Object stubs, RPC, each object's SQLite and
 * its alarm.
 */
export class ChildRuns implements ChildSteps {
  readonly #host: ChildRunsHost;
  readonly #namespaces: Readonly<Record<string, unknown>>;
  readonly #self: ObjectAddress;
  readonly #deliveryTimeoutMs: number;
  /** A delivery asked for by {@link deliverSoon} and not started yet. */
  #soon = false;
  /** Messages queued by this instance, leased for the delivery that sends them at once. */
  readonly #fresh = new Set<string>();

  constructor(host: ChildRunsHost, options: TaskChildrenOptions, deliveryTimeoutMs: number) {
    this.#host = host;
    this.#namespaces = options.namespaces as Readonly<Record<string, unknown>>;
    this.#self = { binding: options.self, id: host.ctx.id.toString() };
    this.#deliveryTimeoutMs = deliveryTimeoutMs;
    this.#namespace(options.self, "children.self");
    host.store.linkRetentionMs = deliveryTimeoutMs;
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

  address(target: TaskChildTarget): ObjectAddress {
    if (typeof target !== "object" || target === null || typeof target.binding !== "string") {
      throw new TasksError(
        "tasks/invalid-argument",
        "A child target is { binding, name } or { binding, id }: a namespace binding in children.namespaces and the object's name or id.",
      );
    }
    const ns = this.#namespace(target.binding, "The child target's binding");
    if ("id" in target && typeof target.id === "string") {
      try {
        return { binding: target.binding, id: ns.idFromString(target.id).toString() };
      } catch (error) {
        throw new TasksError(
          "tasks/invalid-argument",
          `The child target's id "${target.id.slice(0, 80)}" is not an id of namespace "${target.binding}" (${error instanceof Error ? error.message : String(error)}); pass an id this namespace made (newUniqueId, idFromName) as a string, or the object's name.`,
          { cause: error },
        );
      }
    }
    if ("name" in target && typeof target.name === "string" && target.name.length > 0) {
      return { binding: target.binding, id: ns.idFromName(target.name).toString() };
    }
    throw new TasksError(
      "tasks/invalid-argument",
      "A child target needs the object's name (a non-empty string) or its id.",
    );
  }

  /** {@link address}, answered from `cache` for a target seen before by name or id. */
  #cachedAddress(target: TaskChildTarget, cache: Map<string, ObjectAddress>): ObjectAddress {
    const valid =
      typeof target === "object" && target !== null && typeof target.binding === "string";
    const by = valid && "id" in target ? target.id : valid && "name" in target ? target.name : null;
    if (typeof by !== "string") return this.address(target);
    const key = `${"id" in target ? "id" : "name"}\n${target.binding}\n${by}`;
    let address = cache.get(key);
    if (address === undefined) {
      address = this.address(target);
      cache.set(key, address);
    }
    return address;
  }

  #endpoint(address: ObjectAddress): TaskChildEndpoint {
    const ns = this.#namespace(address.binding, "The binding");
    return ns.get(ns.idFromString(address.id)) as unknown as TaskChildEndpoint;
  }

  // ── The parent's side (the port of the steps) ──

  async start(
    run: ChildStarter,
    step: string,
    specs: readonly TaskChildSpec[],
  ): Promise<TaskChildRun[]> {
    const { store } = this.#host;
    const inputs = specs.map((spec, i) =>
      encodeValue(
        spec.input,
        this.#host.maxValueBytes,
        specs.length === 1 ? `step "${step}" child input` : `step "${step}" child ${i} input`,
      ),
    );
    let rows = store.children.ofStep(run.runId, step);
    if (rows.length === 0) {
      // One id per object, however many of its children the step starts (ids are derived by hashing).
      const addresses = new Map<string, ObjectAddress>();
      const intents = specs.map((spec) => ({
        exchange: newExchange(),
        target: this.#cachedAddress(spec.target, addresses),
        definition: spec.definition,
      }));
      const now = this.#host.now();
      rows = store.transaction(() =>
        store.children.intend(run.runId, run.generation, step, intents, now),
      );
      if (rows.length === 0) {
        throw new TasksError(
          "tasks/conflict",
          `Run "${run.runId}" is held by another attempt; this one starts no child.`,
        );
      }
    }
    if (rows.length !== specs.length) {
      throw new NonRetryableError(
        `Step "${step}" of run "${run.runId}" started ${rows.length} child run(s) on an earlier attempt; this attempt asks for ${specs.length}. Keep a step's children the same across attempts, or version the definition.`,
      );
    }
    // The intents decide (a retry after a code change keeps what the first attempt recorded).
    const runs: Array<TaskChildRun | null> = rows.map((row) =>
      row.child_run_id === null
        ? null
        : { runId: row.child_run_id, step, target: JSON.parse(row.target) as ObjectAddress },
    );
    const cancelled = rows.find((row) => row.child_run_id === null && row.state === "cancelled");
    if (cancelled !== undefined) {
      throw new NonRetryableError(
        `Child run "${step}" of run "${run.runId}" was cancelled before it started: its parent settled.`,
      );
    }
    // What is still to start (a retry after a lost answer sends only those), one RPC per object.
    const byTarget = new Map<string, ChildRow[]>();
    for (const row of rows) {
      if (row.child_run_id !== null) continue;
      const list = byTarget.get(row.target);
      if (list === undefined) byTarget.set(row.target, [row]);
      else list.push(row);
    }
    const failures: Error[] = [];
    const answered: Array<{
      row: ChildRow;
      runId: string;
      address: ObjectAddress;
      settled: unknown;
    }> = [];
    await Promise.all(
      [...byTarget].map(async ([targetText, group]) => {
        const address = JSON.parse(targetText) as ObjectAddress;
        const messages = group.map((row) =>
          startMessage(
            row,
            this.#self,
            run.runId,
            step,
            row.idx,
            row.definition,
            inputs[row.idx] as string,
          ),
        );
        let replies: Array<TaskChildMessageReply | undefined>;
        try {
          replies = await this.#call(address, messages);
        } catch (error) {
          failures.push(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        for (let i = 0; i < group.length; i++) {
          const row = group[i] as ChildRow;
          const reply = replies[i];
          if (reply?.ok === true && "runId" in reply && typeof reply.runId === "string") {
            answered.push({ row, runId: reply.runId, address, settled: reply.settled });
          } else {
            failures.push(startFailure(address, run.runId, step, row.definition, reply));
          }
        }
      }),
    );
    // The answers are noted together (one transaction): a parent that dies before resends the
    // starts, which join the same children.
    store.transaction(() =>
      store.children.started(
        run.runId,
        step,
        answered.map(({ row, runId }) => [row.idx, row.key, runId]),
      ),
    );
    const settledAlready: SettledMessage[] = [];
    for (const { row, runId, address, settled } of answered) {
      runs[row.idx] = { runId, step, target: address };
      this.#host.emit({
        type: "task:child:started",
        runId: run.runId,
        definition: run.definition,
        step,
        childRunId: runId,
        target: address,
      });
      const message =
        settled === undefined ? null : answeredSettlement(settled, run.runId, step, row, runId);
      if (message !== null) settledAlready.push(message);
    }
    // Children that settled before their start was answered: applied now, as their delivery
    // would be (proof, content, first settlement wins), so the step that awaits them need not park.
    if (settledAlready.length > 0) this.#receiveSettlements(settledAlready);
    // A refusal for good fails the step at once; anything else is retried (the noted ones stay noted).
    const final = failures.find((error) => error instanceof NonRetryableError);
    if (final !== undefined) throw final;
    if (failures.length > 0) throw failures[0];
    return runs as TaskChildRun[];
  }

  /** Sends `messages` to `address` in one RPC (a batch when there are several); the replies in order. */
  async #call(
    address: ObjectAddress,
    messages: ChildMessage[],
  ): Promise<Array<TaskChildMessageReply | undefined>> {
    const endpoint = this.#endpoint(address);
    if (messages.length === 1) {
      return [(await endpoint.receiveTasks(messages[0])) as TaskChildMessageReply | undefined];
    }
    const reply = (await endpoint.receiveTasks(batchMessage(messages))) as
      | TaskChildReply
      | undefined;
    if (reply !== undefined && "replies" in reply && Array.isArray(reply.replies)) {
      return reply.replies;
    }
    return messages.map(() => reply as TaskChildMessageReply | undefined);
  }

  checkAwaitable(runId: string, runs: readonly TaskChildRun[], what: string): void {
    const ids = runs.map((run) => run.runId);
    if (new Set(ids).size !== ids.length) {
      throw new TasksError("tasks/invalid-argument", `${what} names a child run twice.`);
    }
    const rows = this.#host.store.children.rows(runId, ids);
    const foreign = ids.find((id) => !rows.has(id));
    if (foreign !== undefined) {
      throw new TasksError(
        "tasks/invalid-argument",
        `${what} names run "${foreign}", which is not a child run this run started with step.startChild.`,
      );
    }
  }

  settledPositions(runId: string, runs: readonly TaskChildRun[]): number[] {
    const rows = this.#host.store.children.rows(
      runId,
      runs.map((run) => run.runId),
    );
    const settled: number[] = [];
    for (let i = 0; i < runs.length; i++) {
      const row = rows.get((runs[i] as TaskChildRun).runId);
      if (row !== undefined && isSettled(row)) settled.push(i);
    }
    return settled;
  }

  outcomes(
    runId: string,
    runs: readonly TaskChildRun[],
    positions: readonly number[] | null,
  ): TaskChildOutcome[] {
    const rows = this.#host.store.children.rows(
      runId,
      runs.map((run) => run.runId),
    );
    const settled = positions === null ? null : new Set(positions);
    return runs.map((run, i) => {
      const row = rows.get(run.runId);
      if (row === undefined || !isSettled(row) || (settled !== null && !settled.has(i))) {
        return { runId: run.runId, state: "running" };
      }
      return outcomeOf(run.runId, row);
    });
  }

  registerWait(
    runId: string,
    step: string,
    runs: readonly TaskChildRun[],
    remaining: number,
  ): void {
    this.#host.store.children.registerWait(
      runId,
      step,
      runs.map((run) => run.runId),
      remaining,
    );
  }

  clearWait(runId: string, step: string): void {
    this.#host.store.children.deleteWait(runId, step);
  }

  // ── Receiving (the RPC entry) ──

  /** Applies what another object's Tasks sent (see `Tasks.receive`): one message or a batch. */
  async receive(message: unknown): Promise<TaskChildReply> {
    let read: ReturnType<typeof readChildMessage>;
    try {
      read = readChildMessage(message);
    } catch (error) {
      return this.#refused(null, error);
    }
    if (read.kind === "settled")
      return this.#receiveSettlements([read])[0] as TaskChildMessageReply;
    const answered: AnsweredStart[] = [];
    if (read.kind !== "batch") {
      const reply = await this.#receiveOne(read, answered);
      await this.#withSettlements(answered);
      return reply;
    }
    const replies: TaskChildMessageReply[] = [];
    const { messages } = read;
    for (let i = 0; i < messages.length; ) {
      const m = messages[i] as ChildMessage;
      if (m.kind !== "settled") {
        replies.push(await this.#receiveOne(m, answered));
        i++;
        continue;
      }
      // A run of settlements in a row is applied in one transaction: one commit for all of them.
      const run: SettledMessage[] = [];
      for (; i < messages.length && (messages[i] as ChildMessage).kind === "settled"; i++) {
        run.push(messages[i] as SettledMessage);
      }
      replies.push(...this.#receiveSettlements(run));
    }
    await this.#withSettlements(answered);
    return { v: 2, ok: true, replies };
  }

  /**
   * Gives each answered start's reply its child's settlement when the child has settled: first
   * waits, a bounded number of microtask turns, for the attempts the starts began, so a child that
   * runs without I/O settles before the answer leaves. The settlements one answer carries stay
   * within {@link BATCH_CHARS}, as a delivery batch does. The settlement stays owed in the outbox and
   * is delivered as usual (the parent acknowledges the copy it already applied): the reply only
   * brings it sooner, and one lost loses nothing.
   */
  async #withSettlements(answered: readonly AnsweredStart[]): Promise<void> {
    if (answered.length === 0) return;
    await endedWithoutIo(answered.flatMap(({ attempt }) => (attempt === null ? [] : [attempt])));
    const owed = this.#host.store.outbox.byIds(answered.map(({ key }) => settledId(key)));
    if (owed.length === 0) return;
    const byId = new Map(owed.map((row) => [row.id, row]));
    // The answer stays as small as a delivery batch: what does not fit is delivered on its own.
    let chars = 0;
    for (const { reply, key } of answered) {
      const row = byId.get(settledId(key));
      if (row === undefined) continue;
      const size = row.envelope.length + (row.payload?.length ?? 0);
      if (chars + size > BATCH_CHARS) continue;
      chars += size;
      reply.settled = fromStored(row);
    }
  }

  async #receiveOne(
    m: StartMessage | CancelMessage,
    answered: AnsweredStart[],
  ): Promise<TaskChildMessageReply> {
    try {
      return m.kind === "start" ? this.#receiveStart(m, answered) : await this.#receiveCancel(m);
    } catch (error) {
      return this.#refused(m, error);
    }
  }

  /** Reports a refused message and answers its refusal. */
  #refused(m: ChildMessage | null, error: unknown): TaskChildMessageReply {
    const reply = refusedBy(error);
    this.#reportRefused(m, reply);
    return reply;
  }

  #reportRefused(m: ChildMessage | null, reply: TaskChildMessageReply): void {
    if (reply.ok) return;
    this.#host.emit({
      type: "task:child:refused",
      message: m?.kind ?? null,
      key: m?.key ?? null,
      code: reply.code,
      reason: reply.message,
    });
  }

  /**
   * A start: a new key starts a new run, linked to the exchange in the transaction that accepts
   * it; a known key joins its run (or, cancelled before it started, starts nothing), once the
   * message proves it holds the exchange's secret and names the same parent, run, step and definition.
   */
  #receiveStart(m: StartMessage, answered: AnsweredStart[]): TaskChildMessageReply {
    const host = this.#host;
    const link = host.store.links.get(m.key);
    if (link !== undefined) {
      if (!provesSecret(link.secret, m.secret)) return this.#refusedSilently(m, forbidden(m.kind));
      if (link.child_run_id === null) return GONE;
      const same =
        link.parent === JSON.stringify(m.parent) &&
        link.parent_run_id === m.parentRunId &&
        link.step === m.step &&
        link.idx === m.index &&
        link.definition === m.definition;
      if (!same) {
        return this.#refusedSilently(
          m,
          refusal(
            "tasks/conflict",
            `The child-run exchange "${m.key}" was started by another parent, run, step or definition.`,
          ),
        );
      }
      const joined: StartAnswer = { v: 2, ok: true, runId: link.child_run_id };
      answered.push({ reply: joined, key: m.key, attempt: null });
      return joined;
    }
    // The input is stored as it came, once it is codec text within this object's maxValueBytes.
    if (utf8ByteLength(m.input) > host.maxValueBytes) {
      throw new TasksError(
        "tasks/too-large",
        `The input of child run "${m.step}" is over this object's maxValueBytes (${host.maxValueBytes}); give both objects the same maxValueBytes.`,
      );
    }
    decodeValue(m.input);
    // Synchronous from the lookup above to the accept's transaction: two starts of one key cannot
    // both miss the link.
    const { runId, attempt } = host.accept(m.definition, m.input, (childRunId) =>
      host.store.links.link(m, childRunId),
    );
    const reply: StartAnswer = { v: 2, ok: true, runId };
    answered.push({ reply, key: m.key, attempt });
    return reply;
  }

  /** A cancel from the parent of the exchange: cancels its child run, or, come before the start, leaves a tombstone. */
  async #receiveCancel(m: CancelMessage): Promise<TaskChildMessageReply> {
    const host = this.#host;
    const link = host.store.links.get(m.key);
    if (link === undefined) {
      const expiresAt = host.now() + this.#deliveryTimeoutMs;
      host.store.links.tombstone(m.key, m.secret, expiresAt);
      host.requestWake(expiresAt);
      return acknowledged();
    }
    if (!provesSecret(link.secret, m.secret)) return this.#refusedSilently(m, forbidden(m.kind));
    if (link.child_run_id !== null) await host.cancel(link.child_run_id, m.reason);
    return acknowledged();
  }

  #refusedSilently(m: ChildMessage, reply: TaskChildMessageReply): TaskChildMessageReply {
    this.#reportRefused(m, reply);
    return reply;
  }

  /**
   * Children's settlements, each checked (the exchange's key and secret for the step it names, the
   * child it names, a result or error the codec reads within `maxValueBytes`), then applied once (a
   * duplicate is acknowledged and changes nothing), all in one transaction: one commit however many
   * there are. Each wait is counted down once by the settlements that answer it; a wait that
   * reaches zero makes its run due, and the run starts once the transaction has committed.
   */
  #receiveSettlements(messages: readonly SettledMessage[]): TaskChildMessageReply[] {
    const host = this.#host;
    const now = host.now();
    const parents = new Map<string, RunRow | undefined>();
    const applied: Array<{ m: SettledMessage; definition: string }> = [];
    const woke: string[] = [];
    const replies = host.store.transaction(() => {
      const countdowns = new Map<string, { runId: string; step: string; by: number }>();
      const answers = messages.map((m) => {
        const row = host.store.children.get(m.parentRunId, m.step, m.index);
        // No child at that step (its run was deleted, or never started one): nothing to settle.
        if (row === undefined) return GONE;
        // Another exchange's key, a wrong secret, or another child than the one the start named.
        const proven =
          row.key === m.key &&
          provesSecret(row.secret, m.secret) &&
          (row.child_run_id === null || row.child_run_id === m.childRunId);
        if (!proven) return this.#refusedSilently(m, forbidden(m.kind));
        if (!parents.has(m.parentRunId)) {
          parents.set(m.parentRunId, host.store.runs.getRun(m.parentRunId));
        }
        const parent = parents.get(m.parentRunId);
        if (parent === undefined || TERMINAL_STATES.has(parent.state)) return GONE;
        const bad = this.#checkContent(m);
        if (bad !== null) return this.#refusedSilently(m, bad);
        const settled = host.store.children.settle(
          m.parentRunId,
          m.step,
          m.index,
          m.childRunId,
          m.state,
          m.result,
          m.error,
          now,
        );
        if (settled.applied) {
          applied.push({ m, definition: parent.definition });
          if (settled.waitStep !== null) {
            const key = `${m.parentRunId}\n${settled.waitStep}`;
            const countdown = countdowns.get(key);
            if (countdown === undefined) {
              countdowns.set(key, { runId: m.parentRunId, step: settled.waitStep, by: 1 });
            } else countdown.by++;
          }
        }
        return acknowledged({ applied: settled.applied });
      });
      for (const { runId, step, by } of countdowns.values()) {
        const remaining = host.store.children.countDown(runId, step, by);
        if (remaining === null || remaining > 0) continue;
        if (host.store.runs.wakeForEvent(runId, step, now)) woke.push(runId);
      }
      return answers;
    });
    for (const { m, definition } of applied) {
      host.emit({
        type: "task:child:settled",
        runId: m.parentRunId,
        definition,
        step: m.step,
        childRunId: m.childRunId,
        state: m.state,
      });
    }
    for (const runId of woke) {
      host.requestWake(now);
      host.startRun(runId, now);
    }
    return replies;
  }

  /** Null when a settlement's result or error is one this object can store and read back; its refusal otherwise. */
  #checkContent(m: SettledMessage): TaskChildMessageReply | null {
    const text = m.state === "completed" ? m.result : m.error;
    if (text === null) return null;
    const limit = this.#host.maxValueBytes;
    if (utf8ByteLength(text) > limit) {
      return refusal(
        "tasks/too-large",
        `The settlement of child run "${m.childRunId}" is over this object's maxValueBytes (${limit}); give both objects the same maxValueBytes.`,
      );
    }
    try {
      if (m.state === "completed") decodeValue(text);
      else if (!isErrorRecord(JSON.parse(text))) throw new Error("not an error record");
      return null;
    } catch {
      return refusal(
        "tasks/invalid-argument",
        `The settlement of child run "${m.childRunId}" carries a ${m.state === "completed" ? "result that is not codec text" : "error that is not an error record"}.`,
      );
    }
  }

  // ── Delivering (the alarm's share) ──

  /**
   * Delivers the messages of `ids`, queued by this instance, at once, once the turn that queued
   * them has ended, without waiting for the alarm. Each was queued leased for this delivery (its
   * first back-off written with it), so it leaves without a write of its own, and the alarm, the
   * backstop, sends it again only if it is still owed when that lease ends. The message leaves
   * only after the settlement that queued it is durable: the output gate holds it until then.
   */
  deliverSoon(ids: readonly string[]): void {
    for (const id of ids) this.#fresh.add(id);
    if (this.#soon) return;
    this.#soon = true;
    setTimeout(() => {
      this.#soon = false;
      this.deliverDue().catch(() => {});
    }, 0);
  }

  /** The earliest time a message is owed or a link expires, or null. */
  nextWakeAt(): number | null {
    const owed = this.#host.store.outbox.nextAt();
    const expiry = this.#host.store.links.nextExpiry();
    if (owed === null) return expiry;
    return expiry === null ? owed : Math.min(owed, expiry);
  }

  /**
   * Deletes expired links, then delivers the messages that are due and those queued here for
   * {@link deliverSoon}, one RPC per receiving object (a batch when it owes that object several).
   * A due one is first rescheduled after its back-off (a lease written, with its wake, before the
   * message leaves; a fresh one was queued leased): an object that dies in the middle of a
   * delivery finds it due again. An acknowledged one is deleted; one older than
   * `deliveryTimeoutMs` is dropped.
   */
  async deliverDue(): Promise<void> {
    const host = this.#host;
    const now = host.now();
    const expiry = host.store.links.nextExpiry();
    if (expiry !== null && expiry <= now) {
      if (host.store.links.sweep(now, SWEEP_PER_ALARM) === SWEEP_PER_ALARM) host.requestWake(now);
    }
    const due = host.store.outbox.due(now, DELIVERIES_PER_ALARM);
    const byTarget = new Map<string, typeof due>();
    const add = (row: (typeof due)[number]) => {
      const list = byTarget.get(row.target);
      if (list === undefined) byTarget.set(row.target, [row]);
      else list.push(row);
    };
    const fresh = new Set<string>();
    if (this.#fresh.size > 0) {
      const leased = new Set(due.map((row) => row.id));
      for (const row of host.store.outbox.byIds([...this.#fresh])) {
        if (leased.has(row.id)) continue;
        fresh.add(row.id);
        add(row);
      }
      this.#fresh.clear();
    }
    for (const row of due) {
      const target = JSON.parse(row.target) as ObjectAddress;
      const message = fromStored(row);
      if (now - row.created_at >= this.#deliveryTimeoutMs) {
        host.store.outbox.delete(row.id);
        host.emit({
          type: "task:child:dropped",
          message: message.kind,
          key: message.key,
          target,
          attempts: row.attempts,
        });
        if (!host.listening) {
          console.warn(
            `@durablekit/tasks: dropped message ${row.id} after ${row.attempts} failed deliveries over deliveryTimeoutMs (${this.#deliveryTimeoutMs} ms); its receiver never acknowledged it.`,
          );
        }
        continue;
      }
      const attempts = row.attempts + 1;
      const retryAt = now + retryDelayMs(attempts);
      host.store.outbox.retryAt(row.id, attempts, retryAt);
      host.requestWake(retryAt);
      add(row);
    }
    const sends: Promise<void>[] = [];
    for (const [targetText, rows] of byTarget) {
      const target = JSON.parse(targetText) as ObjectAddress;
      for (const group of batches(rows)) sends.push(this.#send(target, group, fresh));
    }
    // A receiver that hangs must not hold the object's alarm: its messages are leased, so they are
    // delivered again after their back-off whatever this wait decides.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(sends),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, DELIVERY_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (due.length === DELIVERIES_PER_ALARM) host.requestWake(host.now());
  }

  /**
   * Sends `rows` to `target` in one RPC, and deletes each one it acknowledged. A first delivery
   * (its id in `fresh`) that is not acknowledged is rescheduled after the first back-off: its
   * lease ({@link FIRST_LEASE_MS}) was only for a delivery that leaves at once.
   */
  async #send(
    target: ObjectAddress,
    rows: ReturnType<TaskStore["outbox"]["due"]>,
    fresh: ReadonlySet<string>,
  ): Promise<void> {
    const host = this.#host;
    const messages = rows.map((row) => fromStored(row));
    const retrySoon = (unanswered: typeof rows) => {
      const at = host.now() + retryDelayMs(1);
      let any = false;
      for (const row of unanswered) {
        if (!fresh.has(row.id)) continue;
        host.store.outbox.retryAt(row.id, 1, at);
        any = true;
      }
      if (any) host.requestWake(at);
    };
    let replies: Array<TaskChildMessageReply | undefined>;
    try {
      replies = await this.#call(target, messages);
    } catch {
      retrySoon(rows);
      return;
    }
    const acknowledgedIds: string[] = [];
    const unanswered: typeof rows = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as (typeof rows)[number];
      const message = messages[i] as ChildMessage;
      const reply = replies[i];
      if (reply?.ok !== true) unanswered.push(row);
      if (reply?.ok === true) {
        acknowledgedIds.push(row.id);
        host.emit({
          type: "task:child:delivered",
          message: message.kind,
          key: message.key,
          target,
        });
      } else if (reply?.ok === false) {
        host.emit({
          type: "task:child:refused",
          message: message.kind,
          key: message.key,
          code: reply.code,
          reason: reply.message,
          target,
        });
      }
    }
    if (acknowledgedIds.length > 0) host.store.outbox.deleteMany(acknowledgedIds);
    retrySoon(unanswered);
  }
}

/**
 * The settlement a start's reply carried for the child `row` started as `runId`, once read as any
 * message is; null when it is not a settlement of that exchange and child. Its delivery brings the
 * same message again, judged and reported as every message is.
 */
function answeredSettlement(
  settled: unknown,
  parentRunId: string,
  step: string,
  row: ChildRow,
  runId: string,
): SettledMessage | null {
  let read: ReturnType<typeof readChildMessage>;
  try {
    read = readChildMessage(settled);
  } catch {
    return null;
  }
  if (read.kind !== "settled") return null;
  const same =
    read.key === row.key &&
    read.childRunId === runId &&
    read.parentRunId === parentRunId &&
    read.step === step &&
    read.index === row.idx;
  return same ? read : null;
}

/** The error of a start that was not answered with a run: retried unless it is a refusal for good. */
function startFailure(
  address: ObjectAddress,
  runId: string,
  step: string,
  definition: string,
  reply: TaskChildMessageReply | undefined,
): Error {
  const where = `Object ${address.binding}/${address.id}`;
  if (reply?.ok === true && "gone" in reply) {
    return new NonRetryableError(
      `${where} was told to cancel child run "${step}" of run "${runId}" before its start arrived; it started nothing.`,
    );
  }
  if (reply?.ok === false && reply.code === "tasks/schema-too-new") {
    // A deploy cures it (a rolling deploy half done): retried with the step's back-off.
    return new TasksError(
      "tasks/schema-too-new",
      `${where} cannot read this start yet: ${reply.message}`,
    );
  }
  if (reply?.ok === false) {
    return new NonRetryableError(
      `${where} refused to start child run "${step}" of "${definition}": ${reply.message} (${reply.code}).`,
    );
  }
  // Not a reply this package sends: the step retries it.
  return new TasksError(
    "tasks/invalid-argument",
    `${where} answered the start of child run "${step}" with no run id; is its receiveTasks() the one line return this.tasks.receive(message)?`,
  );
}

/** Rows cut into batches of at most `BATCH_CHARS` payload characters (a larger row goes alone). */
function batches<Row extends { envelope: string; payload: string | null }>(rows: Row[]): Row[][] {
  const out: Row[][] = [];
  let current: Row[] = [];
  let size = 0;
  for (const row of rows) {
    const chars = row.envelope.length + (row.payload?.length ?? 0);
    if (
      current.length > 0 &&
      (size + chars > BATCH_CHARS || current.length === MAX_BATCH_MESSAGES)
    ) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(row);
    size += chars;
  }
  if (current.length > 0) out.push(current);
  return out;
}

function isSettled(row: ChildRow): boolean {
  return row.state !== "starting" && row.state !== "running";
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
