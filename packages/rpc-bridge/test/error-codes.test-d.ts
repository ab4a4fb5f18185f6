import { type BridgeErrorCode, isBridgeError } from "../src/index";

// The package's codes are typed from the shared words: these compile…
export const tooLarge: BridgeErrorCode = "bridge/too-large";
export const diverged: BridgeErrorCode = "bridge/diverged";
export const notFound: BridgeErrorCode = "bridge/not-found";
export const own: BridgeErrorCode = "bridge/limit-calls";
// …and a code outside the union, or the words it renamed, do not.
// @ts-expect-error not a code of this package
export const unknownWord: BridgeErrorCode = "bridge/exploded";
// @ts-expect-error renamed to bridge/too-large (limit maxTotalBytes)
export const oldLimit: BridgeErrorCode = "bridge/limit-total-bytes";
// @ts-expect-error renamed to bridge/diverged
export const oldDiverged: BridgeErrorCode = "bridge/replay-diverged";
// @ts-expect-error another package's prefix
export const otherPrefix: BridgeErrorCode = "tasks/not-found";
// The guard takes only this package's codes: a name a code had before it was renamed is refused.
// @ts-expect-error renamed to bridge/too-large (limit maxTotalBytes)
export const guardedOld = isBridgeError(undefined, "bridge/limit-total-bytes");
// @ts-expect-error not a code of this package, then or now
export const guardedUnknown = isBridgeError(undefined, "bridge/exploded");
