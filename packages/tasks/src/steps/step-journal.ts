import { utf8ByteLength } from "@durablekit/compose";
import {
  createJournalArgumentChecks,
  type JournalArgumentChecks,
  type JournalEntry,
  JournalError,
  type JournalOutcomeKind,
  type JournalPort,
  type JournalRecord,
  type JournalRecordResult,
} from "@durablekit/handle-journal";
import { checkName } from "../arguments";
import type { AttemptEnded } from "../attempt/signals";
import { TasksError } from "../errors";
import type { CallStore } from "../store/call-store";
import type { CallRow } from "../store/rows";
import type { TaskStepJournal } from "../types";

/** What a step journal needs of the attempt that took it (the `Attempt` in `attempt.ts`). */
export interface StepJournalOwner {
  readonly runId: string;
  /** The attempt's claim: every write is fenced on it. */
  readonly generation: string;
  /** The run's attempt number. */
  readonly number: number;
  /** How the attempt ended, or null while it is open. */
  readonly ended: AttemptEnded | null;
  /** The engine's clock: a call's `recordedAt`. */
  now(): number;
  /** Ends the attempt: a fenced write found another attempt holding the run. */
  end(how: "superseded"): unknown;
}

function invalid(message: string): TasksError {
  return new TasksError("tasks/invalid-argument", message);
}

function checkExecutionId(executionId: unknown): asserts executionId is string {
  checkName(executionId, "An execution id", false);
}

/** The arguments of `JournalPort.resolve`, as the port declares them. */
type ResolveArguments = Parameters<JournalPort["resolve"]>;

/** The argument rules every journal port shares, throwing `tasks/invalid-argument`. */
const journalCheck: JournalArgumentChecks = createJournalArgumentChecks(invalid);

function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed|PRIMARY KEY/i.test(error.message);
}

export function toEntry(row: CallRow): JournalEntry {
  return {
    executionId: row.executionId,
    key: row.key,
    module: row.module,
    method: row.method,
    argsDigest: row.argsDigest,
    outcome: row.outcome as JournalOutcomeKind,
    payload: row.payload,
    seq: row.seq,
    recordedAt: row.at,
  };
}

/**
 * One step journal of one attempt (`step.journal(name)`): handle-journal's `JournalPort` over the
 * run's `dk_tasks_calls` rows under one journal name. It starts from the rows the attempt loaded with
 * its steps (no query of its own) and keeps them in memory as it writes.
 *
 * Invariant: while the attempt holds the run, the entries here are exactly the journal's rows —
 * only the attempt that holds the run writes them (every write is fenced on its generation), and an
 * attempt has one journal object per name. Once the attempt has ended the entries may be stale, so
 * every method refuses with `tasks/closed`.
 */
export class StepJournal implements TaskStepJournal {
  readonly name: string;
  readonly #owner: StepJournalOwner;
  readonly #calls: CallStore;
  readonly #maxValueBytes: number;
  /** The entries in recorded order, and the same entries by call key. */
  #entries: JournalEntry[];
  readonly #byKey = new Map<string, JournalEntry>();
  /** The execution the journal holds, or null while it holds none. */
  #executionId: string | null;
  #lastSeq = 0;

  constructor(
    owner: StepJournalOwner,
    calls: CallStore,
    maxValueBytes: number,
    name: string,
    rows: readonly CallRow[],
  ) {
    this.#owner = owner;
    this.#calls = calls;
    this.#maxValueBytes = maxValueBytes;
    this.name = name;
    this.#entries = rows.map(toEntry).sort((a, b) => a.seq - b.seq);
    for (const entry of this.#entries) this.#byKey.set(entry.key, entry);
    this.#executionId = this.#entries[0]?.executionId ?? null;
    this.#lastSeq = this.#entries.at(-1)?.seq ?? 0;
  }

  // ── Reading ──

  lookup(executionId: string): readonly JournalEntry[] {
    checkExecutionId(executionId);
    this.#checkOpen();
    this.#checkExecution(executionId);
    // Copies: a caller that edits an entry cannot change what this journal holds.
    return this.#entries.map((entry) => ({ ...entry }));
  }

  // ── Writing ──

  record(entry: JournalRecord): JournalRecordResult {
    this.#checkRecord(entry);
    const { executionId, key, outcome, payload } = entry;
    this.#checkOpen();
    this.#checkExecution(executionId);
    if (this.#byKey.has(key)) throw this.#conflict(key, executionId);
    const row: CallRow = {
      journal: this.name,
      key,
      seq: this.#lastSeq + 1,
      executionId,
      module: entry.module,
      method: entry.method,
      argsDigest: entry.argsDigest,
      outcome,
      payload,
      at: entry.recordedAt ?? this.#owner.now(),
    };
    let written: boolean;
    try {
      written = this.#calls.insertFenced(this.#owner.runId, this.#owner.generation, row);
    } catch (error) {
      if (isUniqueViolation(error)) throw this.#conflict(key, executionId, error);
      throw error;
    }
    if (!written) throw this.#superseded();
    // Only a committed row joins the entries (and advances seq).
    const recorded = toEntry(row);
    this.#entries.push(recorded);
    this.#byKey.set(key, recorded);
    this.#lastSeq = row.seq;
    this.#executionId = executionId;
    return { seq: row.seq, chunks: 0, rowsWritten: 1 };
  }

  resolve(...[executionId, key, outcome, payload, recordedAt]: ResolveArguments): boolean {
    checkExecutionId(executionId);
    journalCheck.key(key);
    journalCheck.outcome(outcome);
    this.#checkPayload(payload);
    journalCheck.recordedAt(recordedAt);
    this.#checkOpen();
    const pending = this.#byKey.get(key);
    if (
      pending === undefined ||
      pending.executionId !== executionId ||
      (pending.outcome !== "interrupt" && pending.outcome !== "unsafe")
    ) {
      return false;
    }
    const at = recordedAt ?? this.#owner.now();
    const { runId, generation } = this.#owner;
    // The entry is pending here, so a refused update can only be a lost fence.
    if (!this.#calls.resolveFenced(runId, generation, this.name, key, outcome, payload, at)) {
      throw this.#superseded();
    }
    const resolved: JournalEntry = { ...pending, outcome, payload, recordedAt: at };
    this.#entries[this.#entries.indexOf(pending)] = resolved;
    this.#byKey.set(key, resolved);
    return true;
  }

  deleteExecution(executionId: string): number {
    checkExecutionId(executionId);
    this.#checkOpen();
    if (executionId !== this.#executionId || this.#entries.length === 0) return 0;
    const { runId, generation } = this.#owner;
    const deleted = this.#calls.deleteJournalFenced(runId, generation, this.name);
    // The journal holds rows here, so deleting none can only be a lost fence.
    if (deleted === 0) throw this.#superseded();
    this.#entries = [];
    this.#byKey.clear();
    this.#executionId = null;
    this.#lastSeq = 0;
    return deleted;
  }

  // ── Checks ──

  /** A record as the `JournalPort` contract describes it, every field checked before anything is written. */
  #checkRecord(entry: unknown): asserts entry is JournalRecord {
    const fields = (typeof entry === "object" && entry !== null ? entry : {}) as Record<
      keyof JournalRecord,
      unknown
    >;
    const described = ["module", "method", "argsDigest"].every(
      (field) => typeof fields[field as keyof JournalRecord] === "string",
    );
    if (!described) {
      throw invalid(
        "record takes a JournalRecord: { executionId, key, module, method, argsDigest, outcome, payload }, with module, method and argsDigest strings.",
      );
    }
    checkExecutionId(fields.executionId);
    journalCheck.key(fields.key);
    journalCheck.outcome(fields.outcome);
    this.#checkPayload(fields.payload);
    journalCheck.recordedAt(fields.recordedAt);
  }

  #checkPayload(payload: unknown): asserts payload is string | null {
    if (payload === null) return;
    if (typeof payload !== "string") {
      throw invalid(
        `A journal payload must be codec text (a string from encode) or null; got ${typeof payload}.`,
      );
    }
    const bytes = utf8ByteLength(payload);
    if (bytes > this.#maxValueBytes) {
      throw new TasksError(
        "tasks/too-large",
        `A journal payload of ${bytes} bytes is over maxValueBytes (${this.#maxValueBytes}) of step journal "${this.name}"; keep a call's result smaller or raise maxValueBytes.`,
      );
    }
  }

  #checkOpen(): void {
    if (this.#owner.ended !== null) throw this.#closed();
  }

  #closed(): TasksError {
    const { runId, number, ended } = this.#owner;
    return new TasksError(
      "tasks/closed",
      `Step journal "${this.name}" of run "${runId}" belongs to attempt ${number}, which has ended (${ended?.how ?? "superseded"}); take it again with step.journal("${this.name}") in the attempt that uses it.`,
    );
  }

  #checkExecution(executionId: string): void {
    if (this.#executionId === null || this.#executionId === executionId) return;
    throw new TasksError(
      "tasks/conflict",
      `Step journal "${this.name}" of run "${this.#owner.runId}" holds execution "${this.#executionId}", not "${executionId}"; take one journal name per execution.`,
    );
  }

  #conflict(key: string, executionId: string, cause?: unknown): JournalError {
    return new JournalError(
      "journal/conflict",
      `Call ${key} of execution ${executionId} is already recorded in step journal "${this.name}"; a call key is recorded once. Replay it instead of running it again.`,
      cause === undefined ? undefined : { cause },
    );
  }

  /** A fenced write found another attempt holding the run: this attempt ends, the journal closes. */
  #superseded(): TasksError {
    this.#owner.end("superseded");
    return this.#closed();
  }
}
