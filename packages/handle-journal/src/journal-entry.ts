/**
 * What a recorded call ended in:
 * - `value`: it returned; `payload` is the encoded result.
 * - `error`: it threw; `payload` is the encoded error (an error record).
 * - `handle`: it returned an object handle; `payload` is the encoded handle record.
 * - `interrupt`: it suspended the run; `payload` is the encoded reason (or null).
 * - `unsafe`: it used a value marked unsafeToRepeat; a replay that reaches it fails the run.
 */
export type JournalOutcomeKind = (typeof OUTCOME_KINDS)[number];

/** The outcome kinds, in the order they are documented: the one list {@link JournalOutcomeKind} is read from. */
export const OUTCOME_KINDS = ["value", "error", "handle", "interrupt", "unsafe"] as const;

/** Which call a journal entry is: its key and what it called. */
export interface JournalCall {
  /** Call key, e.g. `"3"` or `"3.2"` (see `topLevelKey`/`childKey`). */
  key: string;
  /** Module specifier the call went to, e.g. `"codemode:jobs"`. */
  module: string;
  /** Function or method name, e.g. `"start"`. */
  method: string;
  /** Digest of the encoded arguments (see `digestArgs`). */
  argsDigest: string;
}

/** One call to record. */
export interface JournalRecord extends JournalCall {
  /** The run the call belongs to. */
  executionId: string;
  outcome: JournalOutcomeKind;
  /** Codec text of the outcome (see {@link JournalOutcomeKind}), or null when there is none. */
  payload: string | null;
  /** When the call was recorded (epoch ms); the store's clock when absent. */
  recordedAt?: number;
}

/** One recorded call, as loaded from a journal. */
export interface JournalEntry extends JournalRecord {
  /** Order of recording within the execution, from 1. */
  seq: number;
  /** When it was recorded (epoch ms). */
  recordedAt: number;
}
