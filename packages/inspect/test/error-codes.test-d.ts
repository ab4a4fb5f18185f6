// Compiled by `tsc --noEmit` (the package's typecheck, run by `pnpm check`): each
// `@ts-expect-error` line must fail to compile, or the typecheck fails. The code union is
// `ErrorCodeOf` of @durablekit/compose, so a code outside it is a compile error.
import { type InspectErrorCode, isInspectError } from "../src/index";

export const known: InspectErrorCode = "inspect/not-found";
// @ts-expect-error a word the package does not have (the shared word is the code)
export const unknownWord: InspectErrorCode = "inspect/unauthorized";
// @ts-expect-error another package's prefix
export const otherPrefix: InspectErrorCode = "streams/not-found";
// @ts-expect-error the guard takes only the package's codes
export const guarded = isInspectError(undefined, "inspect/conflict");
