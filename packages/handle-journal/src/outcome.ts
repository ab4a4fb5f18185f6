import { decode, type JournalDecodeOptions } from "./decode";
import { encode, type JournalEncodeOptions } from "./encode";
import { fromErrorRecord, isErrorRecord, toErrorRecord } from "./error-record";
import { JournalError } from "./errors";
import type { JournalEntry, JournalOutcomeKind } from "./journal-entry";

/**
 * Encodes a thrown value as the payload of an `error` entry: its error record, so the replay
 * rethrows the same error (same class by name, same props).
 */
export function encodeError(thrown: unknown, options?: JournalEncodeOptions): string {
  return encode(toErrorRecord(thrown), { path: "error", ...options });
}

/**
 * The payload of a recorded entry back as a value, per outcome: `value` and `interrupt` decode
 * their payload, `handle` decodes to the handle record (or the live object when `revive` is
 * given), and `error` throws the recorded error rebuilt.
 * @throws the recorded error for an `error` entry; JournalError `journal/unsafe-to-repeat` for an
 *   `unsafe` entry; CodecError from {@link decode}; `journal/invalid-argument` for a non-entry.
 */
export function replayOutcome(entry: JournalEntry, options?: JournalDecodeOptions): unknown {
  if (typeof entry !== "object" || entry === null || typeof entry.outcome !== "string") {
    throw new JournalError(
      "journal/invalid-argument",
      "replayOutcome takes a recorded JournalEntry (e.g. from a Replayer's replayed step).",
    );
  }
  const kind: JournalOutcomeKind = entry.outcome;
  if (kind === "unsafe") {
    throw new JournalError(
      "journal/unsafe-to-repeat",
      `Call ${entry.key} (${entry.module}.${entry.method}) used a value marked unsafeToRepeat and cannot be replayed; start a new execution.`,
    );
  }
  if (entry.payload === null) return undefined;
  if (kind === "handle" && options?.revive === undefined) {
    return decode(entry.payload, { ...options, revive: (record) => record });
  }
  const value = decode(entry.payload, options);
  if (kind === "error") {
    throw isErrorRecord(value) ? fromErrorRecord(value) : value;
  }
  return value;
}
