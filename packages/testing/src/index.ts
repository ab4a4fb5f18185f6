export {
  advanceTime,
  type TestingAdvanceOptions,
  type TestingAdvanceResult,
  testClockOf,
} from "./clock";
export {
  crashEverywhere,
  type TestingCrashCase,
  type TestingCrashOptions,
  type TestingCrashProblem,
  type TestingCrashReport,
} from "./crash";
export { isTestingError, TestingError, type TestingErrorCode } from "./errors";
export {
  crashFanOut,
  type TestingFanOutCase,
  type TestingFanOutMessage,
  type TestingFanOutOptions,
  type TestingFanOutProblem,
  type TestingFanOutReport,
} from "./fan-out";
export type { TestingMessageFault } from "./fan-out-signal";
export { TestingProbe, type TestingProbeOptions } from "./probe";
export {
  TESTING_SCHEMA_VERSION,
  type TestingBoundary,
  type TestingBoundaryKind,
  type TestingCrashPosition,
  type TestingStepBodies,
} from "./probe-store";
export {
  recordProgram,
  replayProgram,
  TESTING_PROGRAM_RECORDING_FORMAT,
  type TestingProgramEnd,
  type TestingProgramExecutor,
  type TestingProgramRecording,
  type TestingProgramReplayOptions,
  type TestingProgramReplayReport,
} from "./program-replay";
export {
  recordRun,
  TESTING_RECORDING_FORMAT,
  TESTING_RECORDING_VERSION,
  type TestingRecordedError,
  type TestingRecordedStep,
  type TestingRecording,
  type TestingTaskHistorySource,
} from "./recording";
export {
  replayAgainst,
  type TestingDivergence,
  type TestingDivergenceKind,
  type TestingReplayReport,
  type TestingTaskHandler,
} from "./replay";
