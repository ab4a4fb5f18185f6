export { anotherInstance } from "./another-instance";
export {
  BAD_NAMES,
  type CodedErrorGuard,
  type ThrownCode,
  thrownCode,
  thrownCodeSync,
} from "./coded-errors";
export {
  type CountingState,
  countingState,
  type SqlCounts,
  type SqlLogEntry,
  withOverrides,
} from "./counting-state";
export { type FixtureObjects, fixtureObjects, type RunInObject } from "./fixture-objects";
export { schemaShape } from "./schema-shape";
