export { unsafeToRepeat } from "@durablekit/handle-journal";

export type {
  BridgeAccess,
  BridgeCallContext,
  BridgeHostFunction,
  BridgeInterruptPolicy,
} from "./context";
export { type BridgeDescribeOptions, describeModules } from "./describe";
export {
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
  Execution,
  ExecutionError,
  ExecutionInterrupt,
  ExecutionRecord,
  ExecutionState,
} from "./execution";
export { Executor } from "./executor";
export {
  type BridgeLoader,
  DEFAULT_COMPATIBILITY_DATE,
  type ExecuteOptions,
  type ExecutorOptions,
  type ResumeOptions,
} from "./executor-options";
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
export { WIRE_VERSION } from "./wire";
