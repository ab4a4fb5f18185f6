import type { ObjectAddress } from "./protocol";
import type { TaskChildOutcome, TaskChildRun, TaskChildTarget } from "./types";

/** The attempt a `startChild` step runs in: the run, and the generation its writes are fenced on. */
export interface ChildStarter {
  runId: string;
  generation: string;
  definition: string;
}

/** One child a step starts: where, which definition, with what input. */
export interface TaskChildSpec {
  target: TaskChildTarget;
  definition: string;
  input?: unknown;
}

/**
 * The port between the steps of child runs (`step.startChild`, `step.awaitChildren` in `step.ts`)
 * and the protocol behind them (`ChildRuns`): what a step may ask, one direction. Receiving and
 * delivering messages are not here: steps never do either.
 */
export interface ChildSteps {
  /**
   * The address of a target, its namespace and id checked.
   * @throws TasksError `tasks/invalid-argument`.
   */
  address(target: TaskChildTarget): ObjectAddress;
  /**
   * The body of a `startChild` / `startChildren` step: records the intents (once per step, fenced,
   * one transaction), sends the starts (one RPC per object) and notes the child runs they were
   * answered with. A retry joins the same children, and sends only the starts still unanswered.
   */
  start(run: ChildStarter, step: string, specs: readonly TaskChildSpec[]): Promise<TaskChildRun[]>;
  /**
   * Refuses a list a wait could never finish.
   * @throws TasksError `tasks/invalid-argument`.
   */
  checkAwaitable(runId: string, runs: readonly TaskChildRun[], what: string): void;
  /** Positions in `runs` of the children already settled. */
  settledPositions(runId: string, runs: readonly TaskChildRun[]): number[];
  /** The outcomes of `runs`: settled at `positions` (all of them when null), running otherwise. */
  outcomes(
    runId: string,
    runs: readonly TaskChildRun[],
    positions: readonly number[] | null,
  ): TaskChildOutcome[];
  /** A parked `awaitChildren` step waits for `remaining` more of `runs`: call inside the park's transaction. */
  registerWait(runId: string, step: string, runs: readonly TaskChildRun[], remaining: number): void;
  /** The step's wait was answered: call inside the transaction that journals the answer. */
  clearWait(runId: string, step: string): void;
}
