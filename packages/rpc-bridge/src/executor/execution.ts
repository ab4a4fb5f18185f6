import type { BridgeAccess, BridgeInterruptPolicy } from "../context";
import type { BridgeReplayFingerprint } from "../replay/fingerprint";

/**
 * Where an execution is: `running` until it ends `completed`, `failed` or `cancelled`.
 * `interrupted`: a replay run released by `ctx.interrupt()`, waiting for `resume` (it survives
 * evictions and restarts; nothing recovers it but `resume`).
 */
export type BridgeExecutionState = (typeof EXECUTION_STATES)[number];

/** Every {@link BridgeExecutionState}, in lifecycle order: the one list the type is read from. */
export const EXECUTION_STATES = [
  "running",
  "interrupted",
  "completed",
  "failed",
  "cancelled",
] as const;

/** Filters and paging of `Executor.list`. */
export interface BridgeListOptions {
  /** Only executions in this state (or these states). */
  state?: BridgeExecutionState | BridgeExecutionState[];
  /** Page size, 1–1000. Default 50. */
  limit?: number;
  /** The `next` token of the previous page. */
  cursor?: string;
}

/** One page of `Executor.list`: records newest first, and the next page's token (`null` on the last). */
export interface BridgeExecutionPage {
  items: BridgeExecutionRecord[];
  next: string | null;
}

/**
 * An error an execution ended with, as handle-journal's error record body: `name`, `message`,
 * `code` when it had one, and the error's other own JSON properties (`retryable`, `path`, …).
 */
export interface BridgeExecutionError {
  name: string;
  message: string;
  code?: string;
  [prop: string]: unknown;
}

/** What `execute` answers: the execution's id and how it ended. */
export interface BridgeExecution {
  executionId: string;
  state: BridgeExecutionState;
  /** The program's return value, when `completed`. */
  result?: unknown;
  /** Why it failed or was cancelled. */
  error?: BridgeExecutionError;
  /** Where an `interrupted` replay run was released: the call's key and callId, and the payload it gave `ctx.interrupt`. */
  interrupt?: BridgeExecutionInterrupt;
}

/** The `ctx.interrupt(payload)` an interrupted execution waits at. */
export interface BridgeExecutionInterrupt {
  /** The key of the call that interrupted. */
  key: string;
  /** Its callId (`"<executionId>:<key>"`). */
  callId: string;
  /** What it passed to `ctx.interrupt` (data). */
  payload: unknown;
}

/** The stored record of an execution (see `Executor.get`). */
export interface BridgeExecutionRecord extends BridgeExecution {
  onInterrupt: BridgeInterruptPolicy;
  access: BridgeAccess;
  /** 1 for the first attempt; a `"restart"` run counts up. */
  attempt: number;
  /** Bridge calls the last attempt made (only counted when it ends). */
  calls: number;
  createdAt: number;
  /** When the first attempt started; a restart does not change it. */
  startedAt: number;
  finishedAt?: number;
  /** The label of a call marked unsafeToRepeat that ran, which forbids restarting the run. */
  unsafeCall?: string;
  /**
   * A replay run's fingerprint, recorded when it started: digests of the program and source modules,
   * the compatibility date and flags, and the wire and journal formats a replay must match.
   */
  fingerprint?: BridgeReplayFingerprint;
}
