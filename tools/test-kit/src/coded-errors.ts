/** A guard such as `isStreamsError`: true for the package's own coded errors. */
export type CodedErrorGuard<Code extends string> = (error: unknown) => error is { code: Code };

/** What a call did, for a test to compare: the package error code it threw, `"none"`, or what else it threw. */
export type ThrownCode<Code extends string> = Code | "none" | `not coded: ${string}`;

function describeOther(error: unknown): `not coded: ${string}` {
  return `not coded: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
}

/**
 * The code of the package error `fn` throws synchronously, `"none"` when it returns, or a
 * description of anything else it threw (a bare `Error`, a `TypeError`, …), so an assertion on the
 * code fails with what really happened.
 */
export function thrownCodeSync<Code extends string>(
  fn: () => unknown,
  isError: CodedErrorGuard<Code>,
): ThrownCode<Code> {
  try {
    fn();
    return "none";
  } catch (error) {
    return isError(error) ? error.code : describeOther(error);
  }
}

/** As {@link thrownCodeSync}, for a call that may also reject. */
export async function thrownCode<Code extends string>(
  fn: () => unknown,
  isError: CodedErrorGuard<Code>,
): Promise<ThrownCode<Code>> {
  try {
    await fn();
    return "none";
  } catch (error) {
    return isError(error) ? error.code : describeOther(error);
  }
}

/** Names every package must refuse with `…/invalid-argument`: empty, too long, lone surrogates, not strings. */
export const BAD_NAMES: readonly unknown[] = [
  "",
  "x".repeat(257),
  "a\uD800b",
  "\uDC00",
  42,
  null,
  undefined,
  {},
];
