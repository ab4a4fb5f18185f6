export type { Duration, DurationString, DurationUnit } from "./duration";
export {
  DuplicateStepError,
  EventTimeoutError,
  isNonRetryable,
  MissingDefinitionError,
  NonRetryableError,
  ReplayDivergedError,
  StepTimeoutError,
  TasksError,
  type TasksErrorCode,
  type TasksErrorOptions,
} from "./errors";
export type { TaskErrorInfo, TaskEvent, TaskEventType } from "./events";
export type { InterruptedStep } from "./journal";
export type { Backoff, RetryConfig, StepConfig } from "./policy";
export type { RunState, StepKind, StepState, WaitReason } from "./rows";
export { SCHEMA_VERSION } from "./schema";
export { Tasks } from "./tasks";
export type {
  DeleteOptions,
  ListOptions,
  RunOptions,
  SendEventResult,
  StepAttemptContext,
  TaskDefinitions,
  TaskHandle,
  TaskInput,
  TaskOutput,
  TaskReceipt,
  TaskRunSnapshot,
  TaskStep,
  TaskStepSnapshot,
  TasksOptions,
  WaitForEventOptions,
} from "./types";
