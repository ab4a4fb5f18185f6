export {
  type CountingState,
  countingState,
  type SqlCounts,
  type SqlLogEntry,
  withOverrides,
} from "./counting-state";
