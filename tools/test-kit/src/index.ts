export {
  type CountingState,
  countingState,
  type SqlCounts,
  type SqlLogEntry,
} from "./counting-state";
