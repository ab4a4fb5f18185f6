// Compiled by `tsc --noEmit` (the package's typecheck, run by `pnpm check`): each
// `@ts-expect-error` line must fail to compile, or the typecheck fails.
import {
  ComposeError,
  type ComposeErrorCode,
  DurableKitError,
  type ErrorCodeOf,
} from "../src/index";

type DemoCode = ErrorCodeOf<"demo", "not-found" | "conflict", "step-timeout">;

export const shared: DemoCode = "demo/not-found";
export const own: DemoCode = "demo/step-timeout";
// @ts-expect-error a word outside the package's union
export const outside: DemoCode = "demo/gone";
// @ts-expect-error another package's prefix
export const prefix: DemoCode = "tasks/not-found";

// @ts-expect-error a shared word must be a CommonErrorWord
export type NotShared = ErrorCodeOf<"demo", "missing">;
// @ts-expect-error an own word that restates "not-found"
export const restatesNotFound: ErrorCodeOf<"demo", never, "module-not-found"> =
  "demo/module-not-found";
// @ts-expect-error an own word that restates "diverged"
export const restatesDiverged: ErrorCodeOf<"demo", never, "replay-diverged"> =
  "demo/replay-diverged";
// @ts-expect-error a byte limit of its own instead of "too-large"
export const ownByteLimit: ErrorCodeOf<"demo", never, "limit-result-bytes"> =
  "demo/limit-result-bytes";
// @ts-expect-error a shared word passed as an own word
export const sharedAsOwn: ErrorCodeOf<"demo", never, "conflict"> = "demo/conflict";
// @ts-expect-error an error class over a union with a restated word
export class RestatingError extends DurableKitError<ErrorCodeOf<"demo", never, "x-not-found">> {}

export const code: ComposeErrorCode = "compose/part-timeout";
// @ts-expect-error compose has no such code
export const error = new ComposeError("compose/not-found", "x");
