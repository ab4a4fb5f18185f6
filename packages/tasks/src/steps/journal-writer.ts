import type { StepRow, TaskStepKind } from "../store/rows";
import { FenceLost, type TaskStore } from "../store/store";

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
 * The journal writes of one attempt, fenced on the attempt's generation.
 *
 * Every row is written the moment its step settles, synchronously, before the step's promise
 * resolves to the handler: a Durable Object commits the writes of a turn together and its output
 * gate holds every outgoing message until they are durable, so no effect of code that saw a step's
 * result can be observed before that result's row is. Nothing is ever held in memory, so nothing
 * can be lost when an attempt ends (parked, abandoned, superseded) or the object dies.
 */
export class JournalWriter {
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

  /**
   * Writes one row, fenced, with an optional `extra` statement in the same transaction. Returns
   * false (after `onFenceLost`) when another attempt holds the run.
   */
  write(row: StepRow, extra?: () => void): boolean {
    const store = this.#store;
    const exists = this.#stored.has(row.name) || this.#journaled(row.name);
    try {
      const fenced = () => {
        if (!store.steps.writeStepFenced(this.#runId, this.#generation, row, exists)) {
          throw new FenceLost(this.#runId);
        }
        extra?.();
      };
      // One statement needs no transaction of its own: it is atomic.
      if (extra) store.transaction(fenced);
      else fenced();
      this.#stored.add(row.name);
      return true;
    } catch (error) {
      if (error instanceof FenceLost) {
        this.#onFenceLost();
        return false;
      }
      throw error;
    }
  }

  /**
   * Marks a step in flight (`running`, with its attempt number): the evidence a later attempt reads
   * as `step.interrupted` and counts toward the step's retries. Written only for a callback that
   * returned a promise, in the same turn it started: a callback that returns synchronously settles
   * in that turn, and its completed row is the only one it needs.
   */
  markStarted(name: string, seq: number, attempt: number, now: number): boolean {
    return this.write(stepRow(name, seq, "do", now, { state: "running", attempt }));
  }
}
