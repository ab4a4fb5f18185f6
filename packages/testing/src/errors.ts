import { DurableKitError, type ErrorCodeOf, errorGuard } from "@durablekit/compose";

/**
 * Codes of the errors `@durablekit/testing` throws. The shared words mean what docs/composing.md
 * says they mean.
 *
 * - `testing/invalid-argument`: a malformed `ctx`, option, recording or argument; nothing was done.
 * - `testing/not-found`: the run a recording or a crash test names does not exist in the object.
 * - `testing/schema-too-new`: the `dk_testing_*` tables were written by a newer version of this package.
 * - `testing/unsettled`: a run did not settle (or reach the boundary asked for) within the budget of
 *   wakes and time: it waits for an event nobody sends, or keeps running.
 * - `testing/unsupported`: the replay met something a recording cannot answer (the result or error
 *   of a child run: a recording holds its children's states).
 * - `testing/injected-fault`: a probe lost a child-run message (or its reply) because a
 *   `crashFanOut` test armed it: the sending object's `Tasks` delivers it again.
 */
export type TestingErrorCode = ErrorCodeOf<
  "testing",
  "invalid-argument" | "not-found" | "schema-too-new",
  "unsettled" | "unsupported" | "injected-fault"
>;

/** Base class of every error `@durablekit/testing` throws (a `DurableKitError`). None is retryable. */
export class TestingError extends DurableKitError<TestingErrorCode> {
  override readonly name: string = "TestingError";
}

/** True when `value` is a {@link TestingError}, optionally with the given code. */
export const isTestingError = errorGuard(TestingError);
