export {
  callIdOf,
  childKey,
  compareKeys,
  isCallKey,
  parentKey,
  parseKey,
  topLevelKey,
} from "./call-key";
export { utf8ByteLength } from "./codec-format";
export { type DecodeOptions, decode } from "./decode";
export { digestArgs, digestText } from "./digest";
export { DEFAULT_MAX_DEPTH, type EncodeOptions, encode, encodedSize } from "./encode";
export { type ErrorRecord, fromErrorRecord, isErrorRecord, toErrorRecord } from "./error-record";
export {
  CodecError,
  DivergenceError,
  isJournalError,
  JournalError,
  type JournalErrorCode,
  type JournalErrorOptions,
} from "./errors";
export {
  createReviver,
  type Handle,
  type HandleRecord,
  handle,
  handleKindOf,
  handleRecord,
  isHandle,
  isHandleRecord,
  parseHandleKind,
  type ReviveMap,
  type RevivingModule,
} from "./handle";
export {
  type JournalCall,
  type JournalEntry,
  type JournalRecord,
  OUTCOME_KINDS,
  type OutcomeKind,
} from "./journal-entry";
export type { JournalPort, JournalRecorded } from "./journal-port";
export {
  DEFAULT_MAX_CHUNK_BYTES,
  JOURNAL_SCHEMA_VERSION,
  type JournalEvent,
  JournalStore,
  type JournalStoreOptions,
  type RecordResult,
} from "./journal-store";
export { encodeError, replayOutcome } from "./outcome";
export { Replayer, type ReplayStep } from "./replayer";
export { splitText } from "./split-text";
export { isUnsafeToRepeat, unsafeToRepeat } from "./unsafe";
