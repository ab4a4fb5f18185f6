export { Alarms, type AlarmsEvent, type AlarmsOptions } from "./alarms";
export {
  type CommonErrorWord,
  ComposeError,
  type ComposeErrorCode,
  DurableKitError,
  type DurableKitErrorOptions,
  type ErrorCodeOf,
  errorGuard,
  isComposeError,
  isDurableKitError,
  type OwnErrorWord,
} from "./errors";
export { createEmitter } from "./events";
export { isWellFormedName } from "./names";
export { type ComposePartClaim, claimPart } from "./one-part";
export {
  type ArgumentErrorFactory,
  createOptionChecks,
  describeValue,
  type OptionChecks,
  type OptionRange,
} from "./options";
export { ParkedWaiters } from "./parked";
export { type AlarmPart, isAlarmPart } from "./part";
export {
  migrateSchema,
  type SchemaOptions,
  type SchemaStep,
  schemaTooNewMessage,
} from "./schema";
export { utf8ByteLength } from "./utf8";
export { requestWake } from "./wake";
