import type { JournalErrorRecord } from "@durablekit/handle-journal";

/** The interrupt a replay run was released at (`ctx.interrupt(payload)` of call `key`). */
export interface RunInterrupt {
  key: string;
  callId: string;
  payload: unknown;
}

/**
 * How one attempt of a run ended. `interrupted`: `ctx.interrupt()` or a restart in a `"fail"` or
 * `"restart"` run; `suspended`: `ctx.interrupt()` in a replay run, which waits for `resume`.
 */
export type AttemptOutcome =
  | { kind: "completed"; value: unknown }
  | { kind: "failed"; error: JournalErrorRecord }
  | { kind: "interrupted"; reason: string }
  | { kind: "suspended"; interrupt: RunInterrupt }
  | { kind: "cancelled"; reason: string };
