import { utf8ByteLength } from "@durablekit/compose";

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

/** What a journal entry says about its call without decoding its payload (see {@link entryFacts}). */
export interface JournalEntryFacts {
  /** The call's key: `"1"`, `"2"`, … for module calls; `"1.1"` for the first call on what call 1 returned. */
  key: string;
  /** Its place in the journal's order, from 1. */
  seq: number;
  /**
   * The module specifier (`"codemode:jobs"`), or for a call on an object a call returned, its kind
   * (`"codemode:jobs#Job"`).
   */
  module: string;
  method: string;
  /**
   * How the call ended (a `JournalOutcomeKind`): `value`, `handle`, `error`, `interrupt`
   * (the call released the run; resolved to `value` on resume) or `unsafe` (an `unsafeToRepeat`
   * call's marker whose outcome was never written).
   */
  outcome: JournalOutcomeKind;
  /** When its outcome was recorded (epoch ms). */
  at: number;
  /** The size of its journaled payload, in UTF-8 bytes (0 when it has none). */
  bytes: number;
}

/**
 * The facts of `entry` every listing of calls shows (a bridge's call records, an inspector's call
 * rows), read from its columns alone: nothing is decoded, so an entry this version cannot decode is
 * described all the same.
 */
export function entryFacts(entry: JournalEntry): JournalEntryFacts {
  return {
    key: entry.key,
    seq: entry.seq,
    module: entry.module,
    method: entry.method,
    outcome: entry.outcome,
    at: entry.recordedAt,
    bytes: entry.payload === null ? 0 : utf8ByteLength(entry.payload),
  };
}
