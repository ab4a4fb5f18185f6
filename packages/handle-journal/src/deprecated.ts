// Names kept for compatibility: each type was renamed so that its name carries the package's
// noun (docs/composing.md, "Names of types"). They will be removed in 1.0.
import type {
  HandleReviveMap,
  HandleRevivingModule,
  JournalDecodeOptions,
  JournalEncodeOptions,
  JournalErrorRecord,
  JournalOutcomeKind,
  JournalRecordResult,
  JournalReplayStep,
} from "./index";

/** @deprecated Renamed {@link JournalDecodeOptions}. */
export type DecodeOptions = JournalDecodeOptions;

/** @deprecated Renamed {@link JournalEncodeOptions}. */
export type EncodeOptions = JournalEncodeOptions;

/** @deprecated Renamed {@link JournalErrorRecord}. */
export type ErrorRecord = JournalErrorRecord;

/** @deprecated Renamed {@link JournalOutcomeKind}. */
export type OutcomeKind = JournalOutcomeKind;

/** @deprecated Renamed {@link JournalRecordResult}. */
export type RecordResult = JournalRecordResult;

/** @deprecated Renamed {@link JournalReplayStep}. */
export type ReplayStep = JournalReplayStep;

/** @deprecated Renamed {@link HandleReviveMap}. */
export type ReviveMap = HandleReviveMap;

/** @deprecated Renamed {@link HandleRevivingModule}. */
export type RevivingModule = HandleRevivingModule;
