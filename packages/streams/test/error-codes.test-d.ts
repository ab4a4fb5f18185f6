// Compiled by `tsc --noEmit` (the package's typecheck, run by `pnpm check`): each
// `@ts-expect-error` line must fail to compile, or the typecheck fails. The code union is
// `ErrorCodeOf` of @durablekit/compose, so a code outside it is a compile error.
import { isStreamsError, type StreamsErrorCode } from "../src/index";

export const known: StreamsErrorCode = "streams/too-large";
// @ts-expect-error a word the package does not have (the shared word is the code)
export const unknownWord: StreamsErrorCode = "streams/limit-chunk-bytes";
// @ts-expect-error another package's prefix
export const otherPrefix: StreamsErrorCode = "tasks/not-found";
// @ts-expect-error the guard takes only the package's codes
export const guarded = isStreamsError(undefined, "streams/limit-chunk-bytes");
