import type { TaskChildAddress, TaskErrorInfo } from "../events";

/** Where a child run is started: a namespace binding and the object's name (or its id). */
export type TaskChildTarget = { binding: string; name: string } | { binding: string; id: string };

/** A child run a step started (`step.startChild`): plain data, journaled with the step. */
export interface TaskChildRun {
  runId: string;
  /** The parent's step that started it. */
  step: string;
  /** The object it runs in. */
  target: TaskChildAddress;
}

/** How a child run stands, as `step.awaitChildren` reports it. */
export type TaskChildOutcome =
  | { runId: string; state: "completed"; result: unknown }
  | { runId: string; state: "failed" | "cancelled"; error: TaskErrorInfo }
  /** Not settled when the await was answered (it awaited fewer than all, or timed out). */
  | { runId: string; state: "running" };

/** A child run as its parent's object knows it (`tasks.children(runId)`). */
export interface TaskChildSnapshot {
  /** The child run's id; null while its start has not been answered. */
  runId: string | null;
  /** The parent's step that started it. */
  step: string;
  /** Its position among the children its step started (0 for `startChild`). */
  index: number;
  /** The object it runs in. */
  target: TaskChildAddress;
  /** The child's definition. */
  definition: string;
  /**
   * `starting` from the parent's intent until the child's object answered the start, `running`
   * until its settlement arrived; `cancelled` as soon as the parent settled before it (the parent
   * owes it a cancel then).
   */
  state: "starting" | "running" | "completed" | "failed" | "cancelled";
  /** When it settled as the parent knows it (epoch ms), or null while it runs. */
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
   * retried before it is dropped, and how long a settled child keeps its side of the exchange (so
   * a start its parent retries that late joins it instead of starting it again), in milliseconds
   * (604800000: 7 days).
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
