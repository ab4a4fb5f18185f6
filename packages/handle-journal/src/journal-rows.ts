import { JournalError } from "./errors";
import type { JournalEntry, JournalOutcomeKind } from "./journal-entry";

// One query loads a whole journal: entry rows, each chunked entry repeated once per chunk.
export const SELECT_ENTRIES = `SELECT e.call_key, e.seq, e.module, e.method, e.args_digest, e.outcome, e.payload,
    e.chunks, e.recorded_at, c.data
  FROM dk_journal_entries e
  LEFT JOIN dk_journal_chunks c
    ON e.chunks > 0 AND c.execution_id = e.execution_id AND c.call_key = e.call_key
  WHERE e.execution_id = ?
  ORDER BY e.seq, c.part`;

/** A row of {@link SELECT_ENTRIES}, as `raw()` gives it. */
export type EntryRow = [
  string,
  number,
  string,
  string,
  string,
  string,
  string | null,
  number,
  number,
  string | null,
];

/** A chunked entry with its payload put back together from its chunk rows. */
function joined(entry: JournalEntry, parts: string[], expected: number): JournalEntry {
  if (parts.length !== expected) {
    throw new JournalError(
      "journal/corrupt",
      `Call ${entry.key} of execution ${entry.executionId} has ${parts.length} of its ${expected} chunk rows; the journal was altered outside this package.`,
    );
  }
  entry.payload = parts.join("");
  return entry;
}

/**
 * The entries of rows ordered by seq then part: an entry's chunk rows follow it, and are joined
 * into its payload.
 * @throws JournalError `journal/corrupt` when chunk rows are missing.
 */
export function collectEntries(executionId: string, rows: Iterable<EntryRow>): JournalEntry[] {
  const out: JournalEntry[] = [];
  let chunked: JournalEntry | undefined;
  let expected = 0;
  let parts: string[] = [];
  for (const row of rows) {
    const [key, seq, module, method, argsDigest, outcome, payload, chunks, recordedAt, data] = row;
    if (chunked !== undefined) {
      if (chunks > 0 && chunked.key === key) {
        parts.push(data ?? "");
        continue;
      }
      out.push(joined(chunked, parts, expected));
      chunked = undefined;
    }
    const entry: JournalEntry = {
      executionId,
      key,
      seq,
      module,
      method,
      argsDigest,
      outcome: outcome as JournalOutcomeKind,
      payload,
      recordedAt,
    };
    if (chunks > 0) {
      chunked = entry;
      expected = chunks;
      parts = data === null ? [] : [data];
    } else {
      out.push(entry);
    }
  }
  if (chunked !== undefined) out.push(joined(chunked, parts, expected));
  return out;
}
