// Names kept for compatibility until 1.0: each type was renamed so that its name carries the
// package's noun, and each code so that it uses the shared words (docs/composing.md, "Names of
// types" and "Error codes").
import type { BridgeByteLimit, BridgeErrorCode } from "./errors";
import type {
  BridgeExecution,
  BridgeExecutionError,
  BridgeExecutionInterrupt,
  BridgeExecutionRecord,
  BridgeExecutionState,
} from "./execution";
import type { BridgeExecuteOptions, BridgeResumeOptions } from "./executor-options";

/** @deprecated Renamed {@link BridgeExecution}. */
export type Execution = BridgeExecution;

/** @deprecated Renamed {@link BridgeExecutionError}. */
export type ExecutionError = BridgeExecutionError;

/** @deprecated Renamed {@link BridgeExecutionInterrupt}. */
export type ExecutionInterrupt = BridgeExecutionInterrupt;

/** @deprecated Renamed {@link BridgeExecutionRecord}. */
export type ExecutionRecord = BridgeExecutionRecord;

/** @deprecated Renamed {@link BridgeExecutionState}. */
export type ExecutionState = BridgeExecutionState;

/** @deprecated Renamed {@link BridgeExecuteOptions}. */
export type ExecuteOptions = BridgeExecuteOptions;

/** @deprecated Renamed {@link BridgeResumeOptions}. */
export type ResumeOptions = BridgeResumeOptions;

/**
 * What each renamed code became: a byte limit's code is `bridge/too-large` with the option in the
 * error's `limit`; `bridge/replay-diverged` is `bridge/diverged`; `bridge/module-not-found` is
 * `bridge/not-found` (from `execute`, where it can only mean a module).
 */
export const DEPRECATED_BRIDGE_CODES = {
  "bridge/limit-request-bytes": { code: "bridge/too-large", limit: "maxRequestBytes" },
  "bridge/limit-response-bytes": { code: "bridge/too-large", limit: "maxResponseBytes" },
  "bridge/limit-total-bytes": { code: "bridge/too-large", limit: "maxTotalBytes" },
  "bridge/limit-input-bytes": { code: "bridge/too-large", limit: "maxInputBytes" },
  "bridge/limit-result-bytes": { code: "bridge/too-large", limit: "maxResultBytes" },
  "bridge/limit-interrupt-bytes": { code: "bridge/too-large", limit: "maxInterruptBytes" },
  "bridge/replay-diverged": { code: "bridge/diverged" },
  "bridge/module-not-found": { code: "bridge/not-found" },
} as const satisfies Record<string, { code: BridgeErrorCode; limit?: BridgeByteLimit }>;

/**
 * @deprecated Codes renamed in 0.x; `isBridgeError(e, code)` still accepts them until 1.0 (see
 * {@link BridgeErrorCode} for what each became). Errors carry only the new codes.
 */
export type DeprecatedBridgeErrorCode = keyof typeof DEPRECATED_BRIDGE_CODES;
