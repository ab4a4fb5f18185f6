import { type JournalErrorRecord, toErrorRecord } from "@durablekit/handle-journal";

/**
 * The error record of any thrown value; never throws. A value whose record cannot be built (a
 * Proxy whose traps throw, a getter that throws) gets a fallback record saying so. Shared by the
 * host and the isolate runtime, so both build records with handle-journal's one `toErrorRecord`.
 */
export function safeErrorRecord(thrown: unknown): JournalErrorRecord {
  try {
    return toErrorRecord(thrown);
  } catch {
    return {
      $error: {
        name: "Error",
        message: "The thrown value could not be read (its properties threw); it was replaced.",
      },
    };
  }
}
