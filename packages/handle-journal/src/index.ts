export {
  callIdOf,
  childKey,
  compareKeys,
  isCallKey,
  parentKey,
  parseKey,
  topLevelKey,
} from "./call-key";
export { decode, type JournalDecodeOptions } from "./decode";
export { digestArgs, digestText } from "./digest";
export { DEFAULT_MAX_DEPTH, encode, encodedSize, type JournalEncodeOptions } from "./encode";
export {
  fromErrorRecord,
  isErrorRecord,
  type JournalErrorRecord,
  toErrorRecord,
} from "./error-record";
export {
  CodecError,
  DivergenceError,
  isJournalError,
  JournalError,
  type JournalErrorCode,
} from "./errors";
export {
  createReviver,
  type Handle,
  type HandleRecord,
  type HandleReviveMap,
  type HandleRevivingModule,
  handle,
  handleKindOf,
  handleRecord,
  isHandle,
  isHandleRecord,
  parseHandleKind,
} from "./handle";
export { createJournalArgumentChecks, type JournalArgumentChecks } from "./journal-checks";
export {
  entryFacts,
  type JournalCall,
  type JournalEntry,
  type JournalEntryFacts,
  type JournalOutcomeKind,
  type JournalRecord,
  OUTCOME_KINDS,
} from "./journal-entry";
export type { JournalPort, JournalRecorded } from "./journal-port";
export { JournalReader } from "./journal-reader";
export {
  DEFAULT_MAX_CHUNK_BYTES,
  JOURNAL_SCHEMA_VERSION,
  type JournalEvent,
  type JournalRecordResult,
  JournalStore,
  type JournalStoreOptions,
} from "./journal-store";
export { encodeError, replayOutcome } from "./outcome";
export { type JournalReplayStep, Replayer } from "./replayer";
export { splitText } from "./split-text";
export { isUnsafeToRepeat, unsafeToRepeat } from "./unsafe";
