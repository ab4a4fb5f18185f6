export { Alarms, type AlarmsEvent, type AlarmsOptions } from "./alarms";
export {
  type CommonErrorWord,
  ComposeError,
  type ComposeErrorCode,
  DurableKitError,
  isComposeError,
  isDurableKitError,
  isErrorOf,
} from "./errors";
export { createEmitter } from "./events";
export { isWellFormedName } from "./names";
export { type AlarmPart, isAlarmPart } from "./part";
export { migrateSchema, type SchemaOptions, type SchemaStep } from "./schema";
export { requestWake } from "./wake";
