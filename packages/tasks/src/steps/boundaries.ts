import { checkName } from "../arguments";
import { DuplicateStepError, TasksError } from "../errors";
import type { TaskStepKind } from "../store/rows";
import type { Journal, JournalRow } from "./journal";
import { stepMismatch } from "./step-match";

/**
 * The boundary rules every step call of one attempt passes before it touches the journal, and what
 * they have seen: the names entered (a name entered twice is a duplicate), how many of them the
 * journal holds (fewer than its size: still replaying), how many steps are new (against
 * `maxStepsPerRun`), and the fatal error once one is met. A live attempt and a replay against a
 * recording apply the same rules through one of these.
 *
 * Once a rule fails, the error is kept: every later step call throws it again, and the run fails
 * with it whatever the handler does next.
 */
export class StepBoundaries {
  /** The run's journal as loaded when the attempt started. */
  readonly journal: Journal;
  readonly #runId: string;
  readonly #maxSteps: number;
  readonly #entered = new Set<string>();
  #enteredJournaled = 0;
  #newSteps = 0;
  #last = "";
  #fatal: Error | null = null;

  constructor(journal: Journal, runId: string, maxSteps: number) {
    this.journal = journal;
    this.#runId = runId;
    this.#maxSteps = maxSteps;
  }

  /** The error a failed rule left (a duplicate, a divergence, the step limit), or null. */
  get fatal(): Error | null {
    return this.#fatal;
  }

  /** The name entered last (`""` before the first). */
  get last(): string {
    return this.#last;
  }

  /** How many entered names the journal holds. */
  get replayed(): number {
    return this.#enteredJournaled;
  }

  /** Whether `name` was entered by this attempt. */
  entered(name: string): boolean {
    return this.#entered.has(name);
  }

  /**
   * Enters a step name: throws the kept fatal error, a `tasks/invalid-argument` for a bad name,
   * and a {@link DuplicateStepError} (kept as fatal) for a name already entered. `internal` names an
   * engine row (a version marker) whose user-facing name was already checked.
   */
  enter(name: string, internal = false): void {
    if (this.#fatal) throw this.#fatal;
    if (!internal) checkName(name, "A step name");
    if (this.#entered.has(name)) this.fail(new DuplicateStepError(name));
    this.#entered.add(name);
    this.#last = name;
    if (this.journal.has(name)) this.#enteredJournaled++;
  }

  /**
   * True while journaled ground lies ahead: the journal holds rows whose names have not been
   * entered yet (a version marker met now predates the run's steps).
   */
  replaying(): boolean {
    return this.#enteredJournaled < this.journal.size;
  }

  /** Fails the run (`tasks/diverged`) if the journal holds another kind or event type at the name. */
  expect(row: JournalRow, kind: TaskStepKind, eventType?: string): void {
    const mismatch = stepMismatch(row, kind, eventType);
    if (mismatch !== null) this.fail(mismatch);
  }

  /**
   * Counts a step journaled for the first time against `maxStepsPerRun` (`tasks/step-limit`, kept
   * as fatal) and returns its sequence number in the journal.
   */
  newStep(): number {
    if (this.journal.size + this.#newSteps >= this.#maxSteps) {
      this.fail(
        new TasksError(
          "tasks/step-limit",
          `Run "${this.#runId}" reached ${this.#maxSteps} steps; split the work across several runs or raise maxStepsPerRun.`,
        ),
      );
    }
    this.#newSteps++;
    return this.journal.takeSeq();
  }

  /** Keeps `error` as the attempt's fatal error and throws it. */
  fail(error: Error): never {
    this.#fatal = error;
    throw error;
  }
}
