import { isCallKey } from "./call-key";
import { type JournalOutcomeKind, OUTCOME_KINDS } from "./journal-entry";

const OUTCOMES: ReadonlySet<string> = new Set(OUTCOME_KINDS);

/**
 * The argument checks of a {@link JournalPort}'s methods, one rule each, shared by every port (the
 * `JournalStore` here, a tasks step journal) so a key or an outcome means the same in all of them.
 * Each check throws the error its port's `invalid` builds. Declare the result's type where you
 * keep it (`const check: JournalArgumentChecks = …`), as TypeScript asks of assertion members.
 */
export interface JournalArgumentChecks {
  /** A call key: positive integers joined by dots (`"3"`, `"3.2"`). */
  key(key: unknown): asserts key is string;
  /** One of {@link OUTCOME_KINDS}. */
  outcome(outcome: unknown): asserts outcome is JournalOutcomeKind;
  /** Codec text (a string from `encode`) or null. */
  payload(payload: unknown): asserts payload is string | null;
  /** Absent, or epoch milliseconds as a finite number. */
  recordedAt(at: unknown): asserts at is number | undefined;
}

/** {@link JournalArgumentChecks} throwing what `invalid(message)` returns. */
export function createJournalArgumentChecks(
  invalid: (message: string) => Error,
): JournalArgumentChecks {
  return {
    key(key) {
      if (!isCallKey(key)) {
        const shown = typeof key === "string" ? JSON.stringify(key.slice(0, 40)) : String(key);
        throw invalid(
          `${shown} is not a call key: a key is positive integers joined by dots, e.g. "3" or "3.2" (topLevelKey(n), childKey(parent, n)).`,
        );
      }
    },
    outcome(outcome) {
      if (typeof outcome !== "string" || !OUTCOMES.has(outcome)) {
        throw invalid(
          `${JSON.stringify(String(outcome))} is not a journal outcome: use one of ${OUTCOME_KINDS.join(", ")}.`,
        );
      }
    },
    payload(payload) {
      if (payload !== null && typeof payload !== "string") {
        throw invalid(
          `A payload must be codec text (a string from encode) or null; got ${typeof payload}.`,
        );
      }
    },
    recordedAt(at) {
      if (at !== undefined && (typeof at !== "number" || !Number.isFinite(at))) {
        throw invalid(
          `recordedAt must be epoch milliseconds (a finite number); got ${String(at)}.`,
        );
      }
    },
  };
}
