// Compiled by `tsc --noEmit` (the package's typecheck, run by `pnpm check`): each
// `@ts-expect-error` line must fail to compile, or the typecheck fails. The code union is
// `ErrorCodeOf` of @durablekit/compose, so a code outside it is a compile error.
import { isTestingError, type TestingErrorCode } from "../src/index";

export const known: TestingErrorCode = "testing/unsettled";
// @ts-expect-error a word the package does not have
export const unknownWord: TestingErrorCode = "testing/crashed";
// @ts-expect-error another package's prefix
export const otherPrefix: TestingErrorCode = "tasks/not-found";
// @ts-expect-error the guard takes only the package's codes
export const guarded = isTestingError(undefined, "testing/diverged");
