import type {
  TaskAttemptSnapshot,
  TaskRestartSnapshot,
  TaskRunHistory,
  TaskRunSnapshot,
  TaskStepSnapshot,
  TaskTruncatedValue,
} from "@durablekit/tasks";
import type { ValueBudget } from "./bounds";
import { errorInfoOf } from "./error-info";
import {
  INSPECT_SHAPE_VERSION,
  type InspectAttempt,
  type InspectChild,
  type InspectJournal,
  type InspectRestart,
  type InspectRun,
  type InspectRunView,
  type InspectStep,
} from "./shape";

/**
 * The mark of a value `Tasks.history(runId, { maxValueBytes })` left unread (tasks' `TRUNCATED`, a
 * registered symbol: tasks is an optional peer, so the inspector does not import it).
 */
const TASKS_TRUNCATED = Symbol.for("@durablekit/tasks/truncated");

/**
 * A run's value through the view's budget: a value tasks left unread (over `maxValueBytes`, read
 * as its size and first characters) becomes its truncated record at once; any other is taken as
 * {@link ValueBudget.take} takes it.
 */
function takeValue(budget: ValueBudget, value: unknown, path: string): unknown {
  if (typeof value === "object" && value !== null && TASKS_TRUNCATED in value) {
    const unread = value as unknown as TaskTruncatedValue;
    return budget.truncated(unread.bytes, unread.preview, path);
  }
  return budget.take(value, path);
}

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
    queuedFor: null,
    flowKey: null,
    priority: null,
  };
  switch (snapshot.state) {
    case "queued":
      run.queuedFor = snapshot.reason;
      run.flowKey = snapshot.key;
      run.priority = snapshot.priority;
      run.wakeAt = snapshot.wakeAt;
      break;
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
    ranMs: 0,
    wakeAt: step.wakeAt ?? null,
    eventType: step.eventType ?? null,
    error: step.error ? errorInfoOf(step.error) : null,
  };
  if ("result" in step) view.result = step.result;
  return view;
}

/**
 * How long the run's attempts ran within `from`–`to`: the overlap of each attempt (from its start
 * to its end, or the next attempt's start for one cut short, or `to` for the live one) with the span.
 */
function ranWithin(attempts: readonly InspectAttempt[], from: number, to: number): number {
  let ran = 0;
  attempts.forEach((attempt, i) => {
    const end = attempt.endedAt ?? attempts[i + 1]?.startedAt ?? to;
    ran += Math.max(0, Math.min(end, to) - Math.max(attempt.startedAt, from));
  });
  return ran;
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
 * time axis, the calls of the programs it ran (`journals`) and the child runs it started. Its
 * values (input, result, each step's result) are taken through `budget`: one too large for the
 * view is a truncated record naming its path below `/runs/<runId>`. A history read with
 * `maxValueBytes` holds its large values as tasks' truncated values (size and first characters),
 * which become such records as they are.
 */
export function runViewOf(
  history: TaskRunHistory,
  journals: InspectJournal[],
  children: InspectChild[],
  restarts: readonly TaskRestartSnapshot[],
  budget: ValueBudget,
): InspectRunView {
  const base = `/runs/${encodeURIComponent(history.run.runId)}`;
  // A history from a tasks version without attempts has none to show.
  const attempts = (history.attempts ?? []).map(attemptOf);
  const view: InspectRunView = {
    version: INSPECT_SHAPE_VERSION,
    run: runOf(history.run),
    input: takeValue(budget, history.input, `${base}/input`),
    attempts,
    steps: [],
    journals: journals.map((journal) => ({
      ...journal,
      calls: journal.calls.map((call) => ({ ...call, attempt: attemptAt(attempts, call.at) })),
    })),
    children,
    restarts: [],
  };
  if (history.run.state === "completed") {
    view.result = takeValue(budget, history.run.result, `${base}/result`);
  }
  let from = history.run.createdAt;
  history.steps.forEach((step, index) => {
    const shown = stepOf(step, index, from);
    shown.ranMs = ranWithin(attempts, shown.from, shown.to);
    if ("result" in shown)
      shown.result = takeValue(budget, shown.result, `${base}/steps/${index}/result`);
    view.steps.push(shown);
    from = shown.to;
  });
  // After the run's own values: its earlier history takes what the budget has left.
  view.restarts = restarts.map((restart) => ({
    restart: restart.restart,
    from: restart.from,
    at: restart.at,
    attempt: restart.attempt,
    state: restart.state,
    steps: restart.steps.map((step, index) => {
      const dropped: InspectRestart["steps"][number] = {
        name: step.name,
        kind: step.kind,
        state: step.state,
        attempts: step.attempt,
        error: step.error ? errorInfoOf(step.error) : null,
      };
      if ("result" in step) {
        const path = `${base}/restarts/${restart.restart}/steps/${index}/result`;
        dropped.result = takeValue(budget, step.result, path);
      }
      return dropped;
    }),
  }));
  return view;
}
