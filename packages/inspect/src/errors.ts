import { DurableKitError, type ErrorCodeOf, errorGuard } from "@durablekit/compose";

/**
 * Codes of the errors `@durablekit/inspect` throws. The inspector reads; it has no storage of its
 * own, so its codes are the shared words for bad input.
 *
 * - `inspect/invalid-argument`: a malformed `ctx`, option, part, id or paging argument; nothing was read.
 * - `inspect/not-found`: a view of a kind the inspector was given no part for.
 *
 * Answered by the run controls of `inspectorResponse` (never thrown):
 * - `inspect/forbidden`: `control.authorize` did not answer `true`, or the request came from
 *   another origin; nothing was changed.
 * - `inspect/too-large`: a control request's body is over 4,096 bytes.
 */
export type InspectErrorCode = ErrorCodeOf<
  "inspect",
  "invalid-argument" | "not-found" | "too-large",
  "forbidden"
>;

/** Base class of every error `@durablekit/inspect` throws. None is retryable. */
export class InspectError extends DurableKitError<InspectErrorCode> {
  override readonly name: string = "InspectError";
}

/** True when `value` is an {@link InspectError}, optionally with the given code. */
export const isInspectError = errorGuard(InspectError);
