import { entryFacts } from "@durablekit/handle-journal";
import type { BridgeCallRecord, BridgeExecutionRecord } from "@durablekit/rpc-bridge";
import type { TaskStepJournalSnapshot } from "@durablekit/tasks";
import type { ValueBudget } from "./bounds";
import { errorInfoOf } from "./error-info";
import { InspectError } from "./errors";
import type { ProgramsReader } from "./parts";
import {
  INSPECT_SHAPE_VERSION,
  type InspectCall,
  type InspectExecution,
  type InspectExecutionView,
} from "./shape";

/** One entry of a step journal, as `Tasks.journals()` reads it. */
type JournalEntry = TaskStepJournalSnapshot["entries"][number];

/** A call the bridge decoded. */
function decodedCall(call: BridgeCallRecord): InspectCall {
  return {
    key: call.key,
    seq: call.seq,
    module: call.module,
    method: call.method,
    outcome: call.outcome,
    at: call.at,
    bytes: call.bytes,
    charged: call.charged,
    handles: [...call.handles],
    error: call.error ? errorInfoOf(call.error) : null,
    refused: call.refused,
    decoded: call.unreadable !== true,
    attempt: null,
  };
}

/** A call shown from the journal's own columns, with no bridge to decode its payload. */
function rawCall(entry: JournalEntry): InspectCall {
  return {
    ...entryFacts(entry),
    charged: null,
    handles: [],
    error: null,
    refused: false,
    decoded: false,
    attempt: null,
  };
}

/**
 * The calls of a journal's entries (read from a task's step journal), decoded through the
 * executor when the inspector has one.
 */
export function callsOf(
  programs: ProgramsReader | null,
  executionId: string,
  entries: readonly JournalEntry[],
): InspectCall[] {
  if (programs === null) return [...entries].sort((a, b) => a.seq - b.seq).map(rawCall);
  return programs.calls(executionId, { journal: { lookup: () => entries } }).map(decodedCall);
}

/** The API path of an execution's values. */
function executionPath(executionId: string): string {
  return `/executions/${encodeURIComponent(executionId)}`;
}

function executionOf(record: BridgeExecutionRecord, budget: ValueBudget): InspectExecution {
  return {
    executionId: record.executionId,
    state: record.state,
    onInterrupt: record.onInterrupt,
    attempts: record.attempt,
    callCount: record.calls,
    createdAt: record.createdAt,
    startedAt: record.startedAt,
    finishedAt: record.finishedAt ?? null,
    interrupt: record.interrupt
      ? {
          key: record.interrupt.key,
          payload: budget.take(
            record.interrupt.payload,
            `${executionPath(record.executionId)}/interrupt`,
          ),
        }
      : null,
    error: record.error ? errorInfoOf(record.error) : null,
    unsafeCall: record.unsafeCall ?? null,
    fingerprint: record.fingerprint ? { ...record.fingerprint } : null,
  };
}

/** A page of executions, newest first. */
export function executionsOf(
  programs: ProgramsReader,
  options: { state?: InspectExecution["state"][]; limit: number; cursor?: string },
  budget: ValueBudget,
): { items: InspectExecution[]; next: string | null } {
  if (programs.list === undefined) {
    throw new InspectError(
      "inspect/not-found",
      "This Executor cannot list its executions: upgrade @durablekit/rpc-bridge.",
    );
  }
  const page = programs.list({
    ...(options.state && options.state.length > 0 ? { state: options.state } : {}),
    limit: options.limit,
    ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
  });
  return { items: page.items.map((record) => executionOf(record, budget)), next: page.next };
}

/** An execution's view: its record and the calls of its own journal, its values through `budget`. */
export function executionViewOf(
  programs: ProgramsReader,
  executionId: string,
  budget: ValueBudget,
): InspectExecutionView | null {
  const record = programs.get(executionId);
  if (record === null) return null;
  const view: InspectExecutionView = {
    version: INSPECT_SHAPE_VERSION,
    execution: executionOf(record, budget),
    calls: programs.calls(executionId).map(decodedCall),
  };
  if (record.state === "completed") {
    view.result = budget.take(record.result, `${executionPath(executionId)}/result`);
  }
  return view;
}
