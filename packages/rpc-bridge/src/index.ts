export { unsafeToRepeat } from "@durablekit/handle-journal";
export type {
  BridgeAccess,
  BridgeCallContext,
  BridgeHostFunction,
  BridgeInterruptPolicy,
} from "./context";
export {
  type BridgeByteLimit,
  BridgeError,
  type BridgeErrorCode,
  type BridgeErrorOptions,
  isBridgeError,
} from "./errors";
export type {
  BridgeCallEvent,
  BridgeCallOutcome,
  BridgeEvent,
  BridgeExecutionEvent,
} from "./events";
export type {
  BridgeExecution,
  BridgeExecutionError,
  BridgeExecutionInterrupt,
  BridgeExecutionPage,
  BridgeExecutionRecord,
  BridgeExecutionState,
  BridgeListOptions,
} from "./executor/execution";
export { Executor } from "./executor/executor";
export {
  type BridgeExecuteOptions,
  type BridgeLoader,
  type BridgeResumeOptions,
  DEFAULT_COMPATIBILITY_DATE,
  type ExecutorOptions,
} from "./executor/executor-options";
export { type BridgeLimits, DEFAULT_LIMITS } from "./limits";
export { type BridgeDescribeOptions, describeModules } from "./modules/describe";
export {
  type BridgeClassDescription,
  type BridgeHostModule,
  type BridgeHostModuleDescription,
  type BridgeModuleDefinition,
  type BridgeModuleMap,
  type BridgeSourceModule,
  hostModule,
  privateModule,
  sourceModule,
} from "./modules/modules";
export { isReadOnly, readOnly, readOnlyMethods } from "./modules/read-only";
export { type BridgeCallRecord, describeCalls } from "./replay/call-records";
export type { BridgeReplayFingerprint } from "./replay/fingerprint";
export type { BridgeRecording, BridgeReplayRecordingOptions } from "./replay/recording";
export { WIRE_VERSION } from "./shared/wire";
