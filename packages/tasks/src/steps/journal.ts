import type { CallRow, StepRow } from "../store/rows";
import type { JournalLoad } from "../store/step-store";

/**
 * A completed `do` row loaded packed: the fields a replay reads of it. Its seq, attempt, `next_step`
 * and `at` are not loaded — a hit never reads them, and the in-flight evidence is found in SQL.
 */
export interface PackedRow {
  name: string;
  kind: "do";
  state: "completed";
  value: string | null;
  wake_at: null;
  event_type: null;
}

/** A journal row as a replay sees it: whole, or packed. */
export type JournalRow = StepRow | PackedRow;

/**
 * A run's step journal (and the calls of its step journals) as loaded, in one query, at the start
 * of an attempt. Replayed steps are
 * answered from memory: a journal hit costs no SQL at all. Completed `do` rows arrive packed (see
 * `step-store.ts`) and are kept as name → value text, so a hit allocates nothing but its decoded
 * value.
 */
export class Journal {
  /** Completed `do` rows loaded packed: name → value text. */
  readonly #packed = new Map<string, string | null>();
  /** Every other row, whole. */
  readonly #rows = new Map<string, StepRow>();
  /** The calls of the run's step journals, by journal name. */
  readonly #calls = new Map<string, CallRow[]>();
  #nextSeq: number;
  /**
   * Rows that record a settled step or call (all but the `running` step markers and the `unsafe`
   * call markers, which are in-flight evidence): the breaker's progress.
   */
  readonly settled: number;

  constructor(load: Pick<JournalLoad, "packed" | "rows" | "calls">) {
    let max = 0;
    for (const { names, values, maxSeq } of load.packed) {
      for (let i = 0; i < names.length; i++) {
        this.#packed.set(names[i] as string, values[i] ?? null);
      }
      if (maxSeq > max) max = maxSeq;
    }
    let running = 0;
    for (const row of load.rows) {
      this.#rows.set(row.name, row);
      if (row.seq > max) max = row.seq;
      if (row.state === "running") running++;
    }
    let calls = 0;
    for (const call of load.calls) {
      const rows = this.#calls.get(call.journal);
      if (rows) rows.push(call);
      else this.#calls.set(call.journal, [call]);
      if (call.outcome !== "unsafe") calls++;
    }
    this.settled = this.size - running + calls;
    this.#nextSeq = max + 1;
  }

  /** The calls recorded through the step journal `name`, as loaded (in no particular order). */
  calls(name: string): readonly CallRow[] {
    return this.#calls.get(name) ?? [];
  }

  get size(): number {
    return this.#packed.size + this.#rows.size;
  }

  /**
   * The hot path of a replay: the value text of a completed `do` step loaded packed (`null` for a
   * row without a value), or `undefined` when the name is not one — then ask {@link Journal.get}.
   */
  completedValue(name: string): string | null | undefined {
    return this.#packed.get(name);
  }

  get(name: string): JournalRow | undefined {
    const row = this.#rows.get(name);
    if (row) return row;
    const value = this.#packed.get(name);
    if (value === undefined) return undefined;
    return { name, kind: "do", state: "completed", value, wake_at: null, event_type: null };
  }

  has(name: string): boolean {
    return this.#rows.has(name) || this.#packed.has(name);
  }

  /** The seq for a step journaled for the first time. */
  takeSeq(): number {
    return this.#nextSeq++;
  }
}
