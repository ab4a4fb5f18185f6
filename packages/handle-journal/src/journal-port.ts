import type { JournalEntry, JournalRecord } from "./journal-entry";

/**
 * The durable log a replay stands on. {@link JournalStore} implements it over its own tables;
 * another log (e.g. a tasks step journal) can implement it over its rows, so one {@link Replayer}
 * serves both. Both methods are synchronous, as Durable Object SQLite is.
 */
export interface JournalPort {
  /** Every entry of an execution, in recorded order (one read, not one per entry). */
  lookup(executionId: string): readonly JournalEntry[];
  /**
   * Durably records one call before its outcome is delivered, as one atomic write.
   * @throws JournalError `journal/conflict` when the key is already recorded.
   */
  record(entry: JournalRecord): unknown;
}
