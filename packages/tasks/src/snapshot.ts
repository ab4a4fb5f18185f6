import type { AttemptRow } from "./store/attempt-store";
import {
  COMPENSATION_PREFIX,
  type RunRow,
  type StepRow,
  VERSION_MARKER_PREFIX,
} from "./store/rows";
import type { BoundedRunRead } from "./store/run-store";
import type { TaskTruncatedValue } from "./truncated";
import type { TaskAttemptSnapshot, TaskRunSnapshot, TaskStepSnapshot } from "./types";
import { decodeValue, errorInfo } from "./values";

/**
 * The public view of a run row; a value named in `truncated` (a bounded read left it unread) is
 * its stand-in.
 */
export function toRunSnapshot(
  row: RunRow,
  truncated: BoundedRunRead["truncated"] = {},
): TaskRunSnapshot {
  const base = {
    runId: row.run_id,
    definition: row.definition,
    attempt: row.attempt,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.idempotency_key === null ? {} : { idempotencyKey: row.idempotency_key }),
    ...(truncated.metadata !== undefined
      ? { metadata: truncated.metadata }
      : row.metadata === null
        ? {}
        : { metadata: decodeValue(row.metadata) }),
    ...(row.trace === null || row.trace === undefined ? {} : { trace: row.trace }),
    ...(row.deadline_at === null || row.deadline_at === undefined
      ? {}
      : { deadlineAt: row.deadline_at }),
    ...(row.stalls > 0 ? { attemptsWithoutProgress: row.stalls } : {}),
  };
  const status = row.status_message === null ? {} : { statusMessage: row.status_message };
  const settledAt = row.settled_at ?? row.updated_at;
  switch (row.state) {
    case "queued":
      return {
        ...base,
        state: "queued",
        reason: row.queued_for ?? "concurrency",
        key: row.flow_key ?? "",
        priority: row.priority ?? 0,
        wakeAt: row.next_at,
      };
    case "pending":
      return { ...base, state: "pending" };
    case "running":
      return {
        ...base,
        state: "running",
        startedAt: row.started_at ?? row.created_at,
        ...status,
        ...(row.pause_requested === 1 ? { pauseRequested: true as const } : {}),
      };
    case "waiting":
      return {
        ...base,
        state: "waiting",
        reason: row.wait_reason ?? "sleep",
        wakeAt: row.next_at,
        ...(row.wait_event === null ? {} : { eventType: row.wait_event }),
        ...status,
      };
    case "paused":
      return { ...base, state: "paused", ...status };
    case "completed":
      return {
        ...base,
        state: "completed",
        result: truncated.result ?? decodeValue(row.result),
        settledAt,
      };
    case "failed":
      return { ...base, state: "failed", error: errorInfo(row.error), settledAt };
    case "cancelled":
      return {
        ...base,
        state: "cancelled",
        ...(row.cancel_reason === null ? {} : { reason: row.cancel_reason }),
        settledAt,
      };
  }
}

/**
 * The public view of journal rows, in step order (a later row for a name replaces an earlier one);
 * a sleep whose deadline is at or before `now` reads as completed. A row's `truncated` stand-in (a
 * bounded read left its result unread) is shown as its result.
 */
export function toStepSnapshots(
  rows: readonly (StepRow & { truncated?: TaskTruncatedValue | null })[],
  now: number,
): TaskStepSnapshot[] {
  type Row = (typeof rows)[number];
  const byName = new Map<string, Row>();
  for (const row of rows) byName.set(row.name, row);
  return [...byName.values()]
    .sort((a, b) => a.seq - b.seq)
    .map((row) => {
      const sleptOut = row.kind === "sleep" && row.wake_at !== null && row.wake_at <= now;
      if (row.name.startsWith(VERSION_MARKER_PREFIX)) {
        return {
          name: row.name.slice(VERSION_MARKER_PREFIX.length),
          kind: "version",
          state: "completed",
          attempt: 0,
          result: row.truncated ?? decodeValue(row.value),
          updatedAt: row.at,
        };
      }
      const compensation = row.name.startsWith(COMPENSATION_PREFIX);
      const view: TaskStepSnapshot = {
        name: compensation ? row.name.slice(COMPENSATION_PREFIX.length) : row.name,
        kind: compensation ? "compensation" : row.kind,
        state: sleptOut ? "completed" : row.state,
        attempt: row.attempt,
        updatedAt: row.at,
      };
      if (row.state === "completed" && row.kind !== "sleep") {
        view.result = row.truncated ?? decodeValue(row.value);
      }
      if (row.state === "failed" || (row.state === "waiting" && row.kind === "do")) {
        view.error = errorInfo(row.value);
      }
      if (row.wake_at !== null) view.wakeAt = row.wake_at;
      if (row.event_type !== null) view.eventType = row.event_type;
      return view;
    });
}

/**
 * A run's attempts as `attempts()` shows them: the rows of attempts that ended without settling the
 * run, then the run's current attempt from the run row when it has no row — running, or the one
 * that settled the run (its end is the settlement).
 */
export function toAttemptSnapshots(
  rows: readonly AttemptRow[],
  run: RunRow,
): TaskAttemptSnapshot[] {
  const attempts = rows.map((row) => {
    const view: TaskAttemptSnapshot = {
      attempt: row.attempt,
      startedAt: row.started_at,
      endedAt: row.ended_at,
      outcome: row.outcome,
    };
    if (row.step !== null) view.step = row.step;
    if (row.error !== null) view.error = errorInfo(row.error);
    return view;
  });
  const current = run.attempt;
  const recorded = rows.some((row) => row.attempt === current);
  const claimedAt = run.attempt_started_at ?? run.started_at;
  if (current > 0 && !recorded && claimedAt !== null) {
    if (run.state === "running") {
      attempts.push({ attempt: current, startedAt: claimedAt, endedAt: null, outcome: "running" });
    } else if (run.state === "completed" || run.state === "failed" || run.state === "cancelled") {
      attempts.push({
        attempt: current,
        startedAt: claimedAt,
        endedAt: run.settled_at ?? run.updated_at,
        outcome: run.state,
      });
    }
  }
  return attempts;
}
