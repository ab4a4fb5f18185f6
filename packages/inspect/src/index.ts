export { InspectError, type InspectErrorCode, isInspectError } from "./errors";
export type { InspectEvent } from "./events";
export type { InspectControlOptions, InspectTasksControl } from "./http/control";
export { type InspectResponseOptions, inspectorResponse } from "./http/response";
export {
  type InspectChunkOptions,
  type InspectExecutionListOptions,
  type InspectListOptions,
  type InspectOptions,
  Inspector,
  type InspectRunListOptions,
} from "./inspector";
export {
  INSPECT_SHAPE_VERSION,
  type InspectAttempt,
  type InspectCall,
  type InspectChatTurn,
  type InspectChatTurnView,
  type InspectChild,
  type InspectChunk,
  type InspectCounts,
  type InspectErrorInfo,
  type InspectExecution,
  type InspectExecutionView,
  type InspectJournal,
  type InspectOverview,
  type InspectPage,
  type InspectPartKind,
  type InspectRestart,
  type InspectRun,
  type InspectRunState,
  type InspectRunView,
  type InspectSchedule,
  type InspectStep,
  type InspectStream,
  type InspectStreamView,
  type InspectSubscription,
  type InspectTruncated,
  type InspectValueView,
} from "./shape";
