export { unsafeToRepeat } from "@durablekit/handle-journal";
export type { Loader } from "./attempt";
export type { Access, CallContext, HostFunction, InterruptPolicy } from "./context";
export { type DescribeOptions, describeModules } from "./describe";
export {
  BridgeError,
  type BridgeErrorCode,
  type BridgeErrorOptions,
  isBridgeError,
} from "./errors";
export type { BridgeCallEvent, BridgeEvent, BridgeExecutionEvent } from "./events";
export type { Execution, ExecutionError, ExecutionRecord, ExecutionState } from "./execution";
export { createExecutor, Executor } from "./executor";
export {
  DEFAULT_COMPATIBILITY_DATE,
  type ExecuteOptions,
  type ExecutorOptions,
} from "./executor-options";
export { DEFAULT_LIMITS, type Limits } from "./limits";
export {
  type ClassDescription,
  type HostModule,
  type HostModuleDescription,
  hostModule,
  type ModuleDefinition,
  type ModuleMap,
  privateModule,
  type SourceModule,
  sourceModule,
} from "./modules";
export { isReadOnly, readOnly, readOnlyMethods } from "./read-only";
export { WIRE_VERSION } from "./wire";
