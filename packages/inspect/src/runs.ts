import type {
  TaskAttemptSnapshot,
  TaskRunHistory,
  TaskRunSnapshot,
  TaskStepSnapshot,
} from "@durablekit/tasks";
import { errorInfoOf } from "./error-info";
import {
  INSPECT_SHAPE_VERSION,
  type InspectAttempt,
  type InspectChild,
  type InspectJournal,
  type InspectRun,
  type InspectRunView,
  type InspectStep,
} from "./shape";

/** A task run's snapshot, in the inspector's shape. */
export function runOf(snapshot: TaskRunSnapshot): InspectRun {
  const run: InspectRun = {
    runId: snapshot.runId,
    definition: snapshot.definition,
    state: snapshot.state,
    attempts: snapshot.attempt,
    createdAt: snapshot.createdAt,
    updatedAt: snapshot.updatedAt,
    startedAt: null,
    settledAt: null,
    waitingFor: null,
    wakeAt: null,
    eventType: null,
    statusMessage: null,
    idempotencyKey: snapshot.idempotencyKey ?? null,
    error: null,
  };
  switch (snapshot.state) {
    case "running":
      run.startedAt = snapshot.startedAt;
      run.statusMessage = snapshot.statusMessage ?? null;
      break;
    case "waiting":
      run.waitingFor = snapshot.reason;
      run.wakeAt = snapshot.wakeAt;
      run.eventType = snapshot.eventType ?? null;
      run.statusMessage = snapshot.statusMessage ?? null;
      break;
    case "failed":
      run.settledAt = snapshot.settledAt;
      run.error = errorInfoOf(snapshot.error);
      break;
    case "cancelled":
      run.settledAt = snapshot.settledAt;
      if (snapshot.reason !== undefined) {
        run.error = { name: "Cancelled", message: snapshot.reason };
      }
      break;
    case "completed":
      run.settledAt = snapshot.settledAt;
      break;
  }
  return run;
}

function stepOf(step: TaskStepSnapshot, index: number, from: number): InspectStep {
  const view: InspectStep = {
    index,
    name: step.name,
    kind: step.kind,
    state: step.state,
    attempts: step.attempt,
    from,
    to: Math.max(from, step.updatedAt),
    wakeAt: step.wakeAt ?? null,
    eventType: step.eventType ?? null,
    error: step.error ? errorInfoOf(step.error) : null,
  };
  if ("result" in step) view.result = step.result;
  return view;
}

function attemptOf(attempt: TaskAttemptSnapshot): InspectAttempt {
  return {
    attempt: attempt.attempt,
    startedAt: attempt.startedAt,
    endedAt: attempt.endedAt,
    outcome: attempt.outcome,
    step: attempt.step ?? null,
    error: attempt.error ? errorInfoOf(attempt.error) : null,
  };
}

/**
 * The attempt that ran a call recorded at `at`: the last attempt that started at or before it (an
 * attempt's calls are recorded between its start and the next attempt's), or null before the first.
 */
function attemptAt(attempts: readonly InspectAttempt[], at: number): number | null {
  let found: number | null = null;
  for (const attempt of attempts) {
    if (attempt.startedAt <= at) found = attempt.attempt;
  }
  return found;
}

/**
 * A run's history as the run view: its facts, its input, its result, its attempts, its steps on a
 * time axis, the calls of the programs it ran (`journals`) and the child runs it started.
 */
export function runViewOf(
  history: TaskRunHistory,
  journals: InspectJournal[],
  children: InspectChild[] = [],
): InspectRunView {
  const steps: InspectStep[] = [];
  let from = history.run.createdAt;
  history.steps.forEach((step, index) => {
    const view = stepOf(step, index, from);
    steps.push(view);
    from = view.to;
  });
  // A history from a tasks version without attempts has none to show.
  const attempts = (history.attempts ?? []).map(attemptOf);
  const view: InspectRunView = {
    version: INSPECT_SHAPE_VERSION,
    run: runOf(history.run),
    input: history.input,
    attempts,
    steps,
    journals: journals.map((journal) => ({
      ...journal,
      calls: journal.calls.map((call) => ({ ...call, attempt: attemptAt(attempts, call.at) })),
    })),
    children,
  };
  if (history.run.state === "completed") view.result = history.run.result;
  return view;
}
