export type { TaskChildSpec } from "./children/child-steps";
export {
  MAX_STARTED_CHILDREN,
  type TaskChildMessageReply,
  type TaskChildReply,
} from "./children/protocol";
export {
  CHILDREN_EVENT,
  MAX_AWAITED_CHILDREN,
  type TaskChildEndpoint,
  type TaskChildOutcome,
  type TaskChildRun,
  type TaskChildrenOptions,
  type TaskChildSnapshot,
  type TaskChildTarget,
} from "./children/types";
export {
  DuplicateStepError,
  EventTimeoutError,
  isNonRetryable,
  isTasksError,
  MissingDefinitionError,
  NonRetryableError,
  ReplayDivergedError,
  RunTimeoutError,
  StepTimeoutError,
  TasksError,
  type TasksErrorCode,
} from "./errors";
export type { TaskChildAddress, TaskErrorInfo, TaskEvent, TaskEventType } from "./events";
export { defineTask, type TaskDefinition } from "./flow/definition";
export type {
  TaskConcurrency,
  TaskDebounce,
  TaskRateLimit,
  TaskSchedule,
  TaskScheduleSnapshot,
  TaskScheduleTick,
} from "./flow/options";
export {
  replayRecordedRun,
  type TaskRecordedRun,
  type TaskReplayOptions,
  type TaskReplayOutcome,
  type TaskReplayResult,
} from "./history";
export type { TaskBackoff, TaskRetryOptions } from "./policy";
export {
  type TaskRunEvent,
  type TaskRunEventBatchOptions,
  type TaskRunEventChunk,
  TaskRunEventLog,
  type TaskRunEventPage,
  type TaskRunEventPageOptions,
  type TaskRunEventReadOptions,
  type TaskRunEventStatus,
  type TaskRunEventType,
} from "./run-event-log";
export type {
  TaskInterruptedStep,
  TaskQueueReason,
  TaskRunState,
  TaskStepKind,
  TaskStepState,
  TaskWaitReason,
} from "./store/rows";
export { TASKS_SCHEMA_VERSION } from "./store/schema";
export { Tasks } from "./tasks";
export {
  isTruncatedValue,
  type TaskTruncatedValue,
  TRUNCATED,
  TRUNCATED_PREVIEW_CHARS,
} from "./truncated";
export type {
  TaskAttemptSnapshot,
  TaskAwaitChildrenOptions,
  TaskDefinitionBase,
  TaskDefinitions,
  TaskDeleteOptions,
  TaskHandle,
  TaskHandler,
  TaskHistoryOptions,
  TaskInput,
  TaskListOptions,
  TaskListPage,
  TaskOutput,
  TaskReceipt,
  TaskRestartOptions,
  TaskRestartResult,
  TaskRestartSnapshot,
  TaskRunCounts,
  TaskRunHistory,
  TaskRunOptions,
  TaskRunSnapshot,
  TaskSendEventResult,
  TaskStep,
  TaskStepAttemptContext,
  TaskStepJournal,
  TaskStepJournalSnapshot,
  TaskStepOptions,
  TaskStepSnapshot,
  TasksOptions,
  TaskTriggerBatch,
  TaskTriggerInput,
  TaskTriggerOptions,
  TaskTriggerReceipt,
  TaskWaitForEventOptions,
} from "./types";
