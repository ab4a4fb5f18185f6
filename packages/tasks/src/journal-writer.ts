import type { StepRow, TaskStepKind } from "./rows";
import { FenceLost, type TaskStore } from "./store";

/** A journal row written at `at`, with the fields its kind does not use left empty. */
export function stepRow(
  name: string,
  seq: number,
  kind: TaskStepKind,
  at: number,
  fields: Partial<StepRow>,
): StepRow {
  return {
    name,
    seq,
    kind,
    state: fields.state ?? "completed",
    attempt: fields.attempt ?? 0,
    value: fields.value ?? null,
    wake_at: fields.wake_at ?? null,
    event_type: fields.event_type ?? null,
    next_step: fields.next_step ?? null,
    at,
  };
}

/**
 * The journal writes of one attempt: chained to keep the hot path at one row per completed step,
 * and fenced on the attempt's generation.
 *
 * A settled step's row is held in `pending` and written by the next boundary — the next step's
 * start (the row then carries `next_step`, the in-flight evidence of that step), a park or the
 * settle — always before any later step callback can run. So every result a step callback could
 * have observed is durable before that callback starts, and one row write both completes a step and
 * marks the next one in flight.
 */
export class JournalWriter {
  /** Settled step rows not yet written. */
  readonly pending: StepRow[] = [];
  readonly #store: TaskStore;
  readonly #runId: string;
  readonly #generation: string;
  readonly #onFenceLost: () => void;
  /** Steps whose row this attempt found in the journal or has written: later writes are upserts. */
  readonly #stored = new Set<string>();
  readonly #journaled: (name: string) => boolean;

  constructor(
    store: TaskStore,
    runId: string,
    generation: string,
    onFenceLost: () => void,
    journaled: (name: string) => boolean,
  ) {
    this.#journaled = journaled;
    this.#store = store;
    this.#runId = runId;
    this.#generation = generation;
    this.#onFenceLost = onFenceLost;
  }

  /** Holds a settled step's row until the next boundary writes it. */
  hold(row: StepRow): void {
    this.pending.push(row);
  }

  /** Takes the pending rows, the last one pointing at `nextStep`. */
  take(nextStep: string | null): StepRow[] {
    const rows = this.pending.splice(0);
    const last = rows[rows.length - 1];
    if (last && nextStep !== null) last.next_step = nextStep;
    return rows;
  }

  /**
   * Writes rows, fenced: one row is one statement; more rows, or an `extra` statement, are one
   * transaction. Returns false (after `onFenceLost`) when another attempt holds the run.
   */
  write(rows: StepRow[], extra?: () => void): boolean {
    const store = this.#store;
    const first = rows[0];
    if (!first) return true;
    try {
      if (rows.length === 1 && !extra) {
        if (
          !store.steps.writeStepFenced(this.#runId, this.#generation, first, this.#exists(first))
        ) {
          throw new FenceLost(this.#runId);
        }
      } else {
        store.transaction(() => {
          if (
            !store.steps.writeStepFenced(this.#runId, this.#generation, first, this.#exists(first))
          ) {
            throw new FenceLost(this.#runId);
          }
          for (const row of rows.slice(1)) store.steps.writeStep(this.#runId, row);
          extra?.();
        });
      }
      for (const row of rows) this.#stored.add(row.name);
      return true;
    } catch (error) {
      if (error instanceof FenceLost) {
        this.#onFenceLost();
        return false;
      }
      throw error;
    }
  }

  #exists(row: StepRow): boolean {
    return this.#stored.has(row.name) || this.#journaled(row.name);
  }

  /**
   * Makes a step's start durable before its callback runs. A step without a row rides on the
   * pending row of the step before it; with nothing pending (the first live step of an attempt, or
   * parallel steps) it writes its own `running` row. A step that has a row (a retry, or a step a dead
   * attempt left running) rewrites it as `running` with the new attempt number.
   */
  markStarted(name: string, seq: number, attempt: number, hasRow: boolean, now: number): boolean {
    const rows =
      !hasRow && this.pending.length > 0
        ? this.take(name)
        : [...this.take(null), stepRow(name, seq, "do", now, { state: "running", attempt })];
    return this.write(rows);
  }
}
