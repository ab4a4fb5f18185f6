export {
  isSseError,
  SseArgumentError,
  SseError,
  type SseErrorCode,
  SseSchemaError,
} from "./errors";
export { readBoundedBody, type SseBoundedBody } from "./protocol/body";
export { DurableStreamsHandler } from "./protocol/handler";
export { formatOffset, parseOffset, type SseOffsetRequest } from "./protocol/offsets";
export type { DurableStreamsSource } from "./protocol/sources";
export { SSE_SCHEMA_VERSION } from "./protocol/store";
export type {
  DurableStreamsForkExport,
  DurableStreamsForkExportRequest,
  DurableStreamsHandlerOptions,
  DurableStreamsHub,
  DurableStreamsPeer,
  SseEvent,
} from "./protocol/types";
export { resumeFrom } from "./resume";
export type { SseSource, SseSourceReadOptions, SseSourceStatus } from "./source";
export { type SseCorsOptions, type SseResponseOptions, sseResponse } from "./sse-response";
export type { DurableStreamsSubscriptionErrorCode } from "./subscriptions/answers";
export { DurableStreamsSubscriptions } from "./subscriptions/hub";
export {
  type DurableStreamsBatch,
  DurableStreamsReceiver,
  type DurableStreamsReceiverOptions,
} from "./subscriptions/receiver";
export type { DurableStreamsWebhookJwk } from "./subscriptions/signing";
export type {
  DurableStreamsSubscriptionsOptions,
  DurableStreamsSubscriptionsPeer,
  DurableStreamsSubscriptionView,
} from "./subscriptions/types";
export type { DurableStreamsSubscriptionStream } from "./subscriptions/wakes";
