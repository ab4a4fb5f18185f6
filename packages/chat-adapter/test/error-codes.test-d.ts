// Compiled by `tsc --noEmit` (the package's typecheck, run by `pnpm check`): each
// `@ts-expect-error` line must fail to compile, or the typecheck fails. The code union is
// `ErrorCodeOf` of @durablekit/compose, so a code outside it is a compile error.
import { type ChatErrorCode, isChatError } from "../src/index";

export const known: ChatErrorCode = "chat/closed";
// @ts-expect-error a word the package does not have (the shared word is the code)
export const unknownWord: ChatErrorCode = "chat/turn-closed";
// @ts-expect-error another package's prefix
export const otherPrefix: ChatErrorCode = "streams/not-found";
// @ts-expect-error the guard takes only the package's codes
export const guarded = isChatError(undefined, "chat/turn-closed");
