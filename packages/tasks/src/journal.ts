import type { StepRow } from "./rows";

/** The step an unclean interruption left mid-execution. */
export interface InterruptedStep {
  readonly name: string;
  readonly attempt: number;
}

/**
 * A run's step journal as loaded, in one query, at the start of an attempt. Replayed steps are
 * answered from this map: a journal hit costs no SQL at all.
 */
export class Journal {
  readonly #rows: Map<string, StepRow>;
  #nextSeq: number;

  constructor(rows: readonly StepRow[]) {
    this.#rows = new Map();
    let max = 0;
    for (const row of rows) {
      this.#rows.set(row.name, row);
      if (row.seq > max) max = row.seq;
    }
    this.#nextSeq = max + 1;
  }

  get size(): number {
    return this.#rows.size;
  }

  get(name: string): StepRow | undefined {
    return this.#rows.get(name);
  }

  /** Records a row this attempt wrote (or is about to write), so later lookups see it. */
  set(row: StepRow): void {
    this.#rows.set(row.name, row);
  }

  /** The seq for a step journaled for the first time. */
  takeSeq(): number {
    return this.#nextSeq++;
  }

  /**
   * The step a dead attempt left mid-execution, from the journal's in-flight evidence: a `do` row
   * still `running` (its marker row), or a `next_step` naming a step that has no row (the step
   * started right after that row was written and never finished). The newest evidence wins.
   */
  interrupted(): InterruptedStep | null {
    let best: { name: string; attempt: number; order: number } | null = null;
    const consider = (name: string, attempt: number, order: number) => {
      if (best === null || order > best.order) best = { name, attempt, order };
    };
    for (const row of this.#rows.values()) {
      if (row.kind === "do" && row.state === "running") consider(row.name, row.attempt, row.seq);
      if (row.next_step !== null && !this.#rows.has(row.next_step)) {
        consider(row.next_step, 1, row.seq + 0.5);
      }
    }
    if (best === null) return null;
    const { name, attempt } = best;
    return { name, attempt };
  }
}
