import type { Attempt } from "./attempt";
import { isNonRetryable, TasksError } from "./errors";
import { stepRow } from "./journal-writer";
import { isPlatformFailure, isPlatformReset } from "./platform";
import { retryDelay, type StepPolicy } from "./policy";
import type { StepRow, WaitReason } from "./rows";
import type { Settlement } from "./run-store";
import { type AttemptEnded, isAttemptEnded } from "./signals";
import { FenceLost } from "./store";
import { errorInfo, errorText, rebuildError } from "./values";

/*
 * How an attempt stops going forward: a failed step becomes a retry park or a journaled failure,
 * a wait parks the run, and the handler's end settles it. Each outcome is one transaction fenced on
 * the attempt's generation; a lost fence ends the attempt as `superseded` without writing.
 */

/**
 * Decides what a failed step attempt becomes, and returns what the step call throws: a rebuilt
 * error (terminal failure, journaled), or the end signal (retry park, cancel, supersede, platform).
 */
export function stepFailed(
  a: Attempt,
  name: string,
  seq: number,
  attempt: number,
  policy: StepPolicy,
  thrown: unknown,
): unknown {
  if (isAttemptEnded(thrown)) return thrown;
  if (a.ended) return a.ended;
  if (a.cancelRequested) return settleCancelled(a);
  if (isPlatformReset(thrown)) return a.abandon();
  const serialization = thrown instanceof TasksError && thrown.code === "tasks/serialization";
  const record = errorText(thrown);
  if (!isNonRetryable(thrown) && !serialization && attempt < policy.limit) {
    const retryAt = Date.now() + retryDelay(policy, attempt);
    a.emit({
      type: "task:step:retry",
      runId: a.runId,
      definition: a.definition,
      step: name,
      attempt,
      retryAt,
      error: errorInfo(record),
    });
    return park(a, "retry", retryAt, [
      ...a.writer.take(null),
      stepRow(name, seq, "do", {
        state: "waiting",
        attempt,
        value: record,
        wake_at: retryAt,
      }),
    ]);
  }
  if (isPlatformFailure(thrown)) return a.abandon();
  const failed = stepRow(name, seq, "do", { state: "failed", attempt, value: record });
  if (!a.writer.write([...a.writer.take(null), failed])) return a.ended;
  return rebuildError(record);
}

/**
 * Parks the run: the run row, the pending rows and the step row that waits are one transaction.
 * Returns the end signal the step call throws. A pending cancel wins over the park.
 */
export function park(
  a: Attempt,
  reason: WaitReason,
  wakeAt: number | null,
  rows: StepRow[],
  waitStep: string | null = null,
  waitEvent: string | null = null,
): AttemptEnded {
  if (a.ended) return a.ended;
  if (a.cancelRequested) return settleCancelled(a);
  const { store } = a.deps;
  try {
    store.transaction(() => {
      const now = Date.now();
      if (!store.runs.park(a.runId, a.generation, reason, wakeAt, waitStep, waitEvent, now)) {
        throw new FenceLost(a.runId);
      }
      for (const row of rows) store.steps.writeStep(a.runId, row);
    });
  } catch (error) {
    if (error instanceof FenceLost) return a.end("superseded");
    throw error;
  }
  a.emit({
    type: "task:waiting",
    runId: a.runId,
    definition: a.definition,
    reason,
    wakeAt,
    ...(waitEvent === null ? {} : { eventType: waitEvent }),
  });
  if (wakeAt !== null) a.deps.requestWake(wakeAt);
  return a.end("parked");
}

/** Parks on a step that already has its row; only the pending rows are written with the run. */
export function parkAgain(
  a: Attempt,
  reason: WaitReason,
  wakeAt: number | null,
  waitStep?: string,
  waitEvent?: string,
): AttemptEnded {
  return park(a, reason, wakeAt, a.writer.take(null), waitStep ?? null, waitEvent ?? null);
}

/** Park with a new waiting step row, chained after the pending rows. */
export function parkNew(
  a: Attempt,
  reason: WaitReason,
  wakeAt: number | null,
  row: StepRow,
  waitEvent?: string,
): AttemptEnded {
  return park(
    a,
    reason,
    wakeAt,
    [...a.writer.take(row.name), row],
    waitEvent === undefined ? null : row.name,
    waitEvent ?? null,
  );
}

/**
 * Settles the run the attempt holds and writes its pending rows, in one transaction. False when
 * another attempt holds the run (nothing was written).
 */
function settleHeld(a: Attempt, settlement: Settlement): boolean {
  const { store } = a.deps;
  const rows = a.writer.take(null);
  let settled = false;
  store.transaction(() => {
    settled = store.runs.settle(a.runId, a.generation, settlement, Date.now());
    if (settled) for (const row of rows) store.steps.writeStep(a.runId, row);
  });
  return settled;
}

/** Settles the run as completed with the handler's result. */
export function settleCompleted(a: Attempt, value: unknown): void {
  if (a.ended) return;
  if (a.fatal || a.cancelRequested) {
    settleThrown(a, a.fatal);
    return;
  }
  let result: string;
  try {
    result = a.encode(value, "result");
  } catch (error) {
    settleFailed(a, error);
    return;
  }
  let settled: boolean;
  if (a.retain) {
    settled = settleHeld(a, { state: "completed", result });
  } else {
    const { store } = a.deps;
    // The pending rows go with the run: a run that is not retained keeps no journal.
    a.writer.take(null);
    settled = store.transaction(() => store.deleteSettledByAttempt(a.runId, a.generation));
  }
  if (!settled) {
    a.end("superseded");
    return;
  }
  const ref = { runId: a.runId, definition: a.definition };
  a.emit({ type: "task:completed", ...ref });
  if (!a.retain) a.emit({ type: "task:deleted", ...ref });
  a.end("settled");
}

/** Settles the run as failed; `onError` sees the error. */
export function settleFailed(a: Attempt, thrown: unknown): void {
  if (a.ended) return;
  const record = errorText(thrown);
  if (!settleHeld(a, { state: "failed", error: record })) {
    a.end("superseded");
    return;
  }
  a.emit({
    type: "task:failed",
    runId: a.runId,
    definition: a.definition,
    error: errorInfo(record),
  });
  a.end("settled");
  a.deps.onFailed(thrown instanceof Error ? thrown : rebuildError(record), a.runId, a.definition);
}

/** Settles the run as cancelled (a requested cancel reached a boundary). */
export function settleCancelled(a: Attempt): AttemptEnded {
  if (a.ended) return a.ended;
  const reason = a.cancelReason;
  if (!settleHeld(a, { state: "cancelled", cancelReason: reason })) return a.end("superseded");
  a.emit({ type: "task:cancelled", runId: a.runId, definition: a.definition, reason });
  return a.end("cancelled");
}

/** Handles whatever the handler threw. */
export function settleThrown(a: Attempt, thrown: unknown): void {
  if (a.ended) return;
  if (isAttemptEnded(thrown)) {
    a.end(thrown.how);
    return;
  }
  if (a.fatal) {
    settleFailed(a, a.fatal);
    return;
  }
  if (a.cancelRequested) {
    settleCancelled(a);
    return;
  }
  if (isPlatformFailure(thrown)) {
    a.abandon();
    return;
  }
  settleFailed(a, thrown);
}
