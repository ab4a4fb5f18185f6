export { unsafeToRepeat } from "@durablekit/handle-journal";

export { type BridgeCallRecord, describeCalls } from "./call-records";
export type {
  BridgeAccess,
  BridgeCallContext,
  BridgeHostFunction,
  BridgeInterruptPolicy,
} from "./context";
export { type BridgeDescribeOptions, describeModules } from "./describe";
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
} from "./execution";
export { Executor } from "./executor";
export {
  type BridgeExecuteOptions,
  type BridgeLoader,
  type BridgeResumeOptions,
  DEFAULT_COMPATIBILITY_DATE,
  type ExecutorOptions,
} from "./executor-options";
export type { BridgeReplayFingerprint } from "./fingerprint";
export { type BridgeLimits, DEFAULT_LIMITS } from "./limits";
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
} from "./modules";
export { isReadOnly, readOnly, readOnlyMethods } from "./read-only";
export type { BridgeRecording, BridgeReplayRecordingOptions } from "./recording";
export { WIRE_VERSION } from "./wire";
