import {
  entryFacts,
  isErrorRecord,
  type JournalEntry,
  type JournalEntryFacts,
} from "@durablekit/handle-journal";
import { bodyOf, type JournaledHandle } from "./journal-format";

/**
 * One journaled call of a replay run, as a reader (an inspector, a support script) sees it: where it
 * sits, what it called and how it ended, without its value. Read from the journal, never written.
 */
export interface BridgeCallRecord extends JournalEntryFacts {
  /** The bytes the call was charged toward the run's limits. */
  charged: number;
  /** The kinds of the objects its answer returned (`"codemode:jobs#Run"`), in answer order. */
  handles: string[];
  /** For an `error` outcome: the error's name, message and code. */
  error?: { name: string; message: string; code?: string };
  /** The bridge refused the call after keying it (access, limits, arguments). */
  refused: boolean;
  /** The payload could not be read by this version of the bridge (its other fields still hold). */
  unreadable?: true;
}

function errorOf(value: unknown): BridgeCallRecord["error"] {
  const record = isErrorRecord(value) ? value.$error : value instanceof Error ? value : null;
  if (record === null) return undefined;
  const error: NonNullable<BridgeCallRecord["error"]> = {
    name: String(record.name),
    message: String(record.message),
  };
  const code = (record as { code?: unknown }).code;
  if (typeof code === "string") error.code = code;
  return error;
}

/** Every handle the decoded answer `value` holds, in text order. */
function handlesIn(value: unknown, seen = new Set<unknown>()): string[] {
  if (typeof value !== "object" || value === null || seen.has(value)) return [];
  seen.add(value);
  const handle = value as Partial<JournaledHandle>;
  if (handle.record !== undefined && typeof handle.record.$handle === "string") {
    return [handle.record.$handle];
  }
  const found: string[] = [];
  const children =
    value instanceof Map ? [...value.keys(), ...value.values()] : Object.values(value);
  for (const child of children) found.push(...handlesIn(child, seen));
  return found;
}

/**
 * The calls of a replay run's journal, in recorded order, as {@link BridgeCallRecord}s: decoded from
 * the entries a `JournalPort` returned (the executor's own journal, or a task's step journal),
 * without reviving anything. An entry whose payload this version cannot read is still listed, with
 * `unreadable: true`.
 */
export function describeCalls(entries: readonly JournalEntry[]): BridgeCallRecord[] {
  return [...entries]
    .sort((a, b) => a.seq - b.seq)
    .map((entry) => {
      const record: BridgeCallRecord = {
        ...entryFacts(entry),
        charged: 0,
        handles: [],
        refused: false,
      };
      try {
        const body = bodyOf(entry);
        if (typeof body.b === "number" && Number.isSafeInteger(body.b) && body.b > 0) {
          record.charged = body.b;
        }
        record.refused = body.f === 1;
        record.handles = handlesIn(body.r);
        if (entry.outcome === "error") {
          const error = errorOf(body.r);
          if (error !== undefined) record.error = error;
        }
      } catch {
        record.unreadable = true;
      }
      return record;
    });
}
