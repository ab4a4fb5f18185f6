export {
  isSseError,
  SseArgumentError,
  SseError,
  type SseErrorCode,
  SseSchemaError,
} from "./errors";
export { type BoundedBody, readBoundedBody } from "./protocol/body";
export { DurableStreamsHandler } from "./protocol/handler";
export { formatOffset, type OffsetRequest, parseOffset } from "./protocol/offsets";
export { SSE_SCHEMA_VERSION } from "./protocol/store";
export type {
  DurableStreamsHandlerOptions,
  DurableStreamsPeer,
  ForkExport,
  ForkExportRequest,
  SseEvent,
} from "./protocol/types";
export { resumeFrom } from "./resume";
export { type SseCorsOptions, type SseResponseOptions, sseResponse } from "./sse-response";
