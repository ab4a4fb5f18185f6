import type { ObjectAddress } from "./protocol";
import type { TaskChildOutcome, TaskChildRun, TaskChildTarget } from "./types";

/** The attempt a `startChild` step runs in: the run, and the generation its writes are fenced on. */
export interface ChildStarter {
  runId: string;
  generation: string;
  definition: string;
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
   * The body of a `startChild` step: records the intent (once per step, fenced), sends the start and
   * notes the child run it was answered with. A retry joins the same child.
   */
  start(
    run: ChildStarter,
    step: string,
    target: TaskChildTarget,
    definition: string,
    input: unknown,
  ): Promise<TaskChildRun>;
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
