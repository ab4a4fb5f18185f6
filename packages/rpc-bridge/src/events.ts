import type { BridgeExecutionState } from "./executor/execution";

/** How a bridge call ended: it ran (`ok` or `error`) or was refused before running (`refused`). */
export type BridgeCallOutcome = "ok" | "error" | "refused";

/** One bridge call ended: it ran (`ok` or `error`) or was refused before running (`refused`). */
export interface BridgeCallEvent {
  type: "bridge:call";
  executionId: string;
  attempt: number;
  /** The call key, absent for a call refused before it got one. */
  key?: string;
  /** What was called: `"codemode:jobs.createJob"`, `"codemode:jobs#Run.wait"`. */
  label: string;
  outcome: BridgeCallOutcome;
  /** The error's `code`, when it had one. */
  code?: string;
  /** Milliseconds from arrival to answer. */
  ms: number;
}

/** An execution changed state (started, restarted, or ended). */
export interface BridgeExecutionEvent {
  type: "bridge:execution";
  executionId: string;
  state: BridgeExecutionState;
  attempt: number;
  /** The error's code when it ended failed or cancelled. */
  code?: string;
  /** How many held objects and functions the bridge disposed when the attempt ended. */
  disposed?: number;
}

/** Every event the executor emits through `onEvent`. */
export type BridgeEvent = BridgeCallEvent | BridgeExecutionEvent;
