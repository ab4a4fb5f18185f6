import type { JournalEntry, JournalOutcomeKind, JournalRecord } from "./journal-entry";

/** What a {@link JournalPort} answers for a recorded call. */
export interface JournalRecorded {
  /** The entry's order of recording within its execution, from 1 (what `lookup` gives back as `seq`). */
  seq: number;
}

/**
 * The durable log a replay stands on. {@link JournalStore} implements it over its own tables;
 * another log (e.g. a tasks step journal) can implement it over its rows, so one {@link Replayer}
 * and one bridge run serve both. Every method is synchronous, as Durable Object SQLite is, and
 * every write is atomic: a run resumed from another store behaves as from a `JournalStore`.
 */
export interface JournalPort {
  /** Every entry of an execution, in recorded order (one read, not one per entry). */
  lookup(executionId: string): readonly JournalEntry[];
  /**
   * Durably records one call before its outcome is delivered, as one atomic write. The entry's
   * `recordedAt`, when given, is stored as is (else the port's clock); `seq` counts up from 1 per
   * execution.
   * @throws JournalError `journal/conflict` when the key is already recorded.
   */
  record(entry: JournalRecord): JournalRecorded;
  /**
   * Replaces the outcome and payload of a pending entry (outcome `interrupt` or `unsafe`) in one
   * atomic write, keeping its `seq`; `recordedAt` (default the port's clock) becomes its time.
   * Returns false, writing nothing, when the key is not recorded with a pending outcome.
   */
  resolve(
    executionId: string,
    key: string,
    outcome: JournalOutcomeKind,
    payload: string | null,
    recordedAt?: number,
  ): boolean;
  /** Deletes an execution's whole journal; returns how many entries it had. Optional. */
  deleteExecution?(executionId: string): number;
}
