import type { JournalEntry } from "./journal-entry";
import type { JournalPort } from "./journal-port";
import { collectEntries, type EntryRow, SELECT_ENTRIES } from "./journal-rows";

/**
 * A read-only view of the object's call journal (the `dk_journal_*` tables a {@link JournalStore}
 * writes), for readers that must write nothing (an inspector): it never creates, checks or
 * migrates a table, and runs no statement but `SELECT`. Before any store created the tables, every
 * journal reads as empty.
 *
 * ```ts
 * const entries = new JournalReader(ctx.storage).lookup(executionId);
 * ```
 */
export class JournalReader implements Pick<JournalPort, "lookup"> {
  readonly #sql: SqlStorage;
  /** Set once the tables were seen: they are never dropped while the object lives. */
  #exists = false;

  constructor(storage: DurableObjectStorage) {
    this.#sql = storage.sql;
  }

  /**
   * Every entry of an execution in recorded order, in one query; `[]` for an unknown execution or
   * before the tables exist.
   * @throws JournalError `journal/corrupt` when chunk rows are missing.
   */
  lookup(executionId: string): JournalEntry[] {
    if (!this.#exists) {
      this.#exists =
        this.#sql
          .exec(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ('dk_journal_entries', 'dk_journal_chunks')",
          )
          .toArray().length === 2;
      if (!this.#exists) return [];
    }
    return collectEntries(
      executionId,
      this.#sql.exec(SELECT_ENTRIES, executionId).raw() as Iterable<EntryRow>,
    );
  }
}
