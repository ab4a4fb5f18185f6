import type { TaskStepJournal } from "@durablekit/tasks";
import { abortPending, abortSignalled, signalAbort, signalAbortPending } from "./crash-signal";
import type { ProbeStore, TestingCrashPosition } from "./probe-store";

type JournalRecordOf = Parameters<TaskStepJournal["record"]>[0];
type RecordResultOf = ReturnType<TaskStepJournal["record"]>;

/**
 * The step journal an instrumented handler receives (`step.journal(name)`): the engine's journal,
 * with a durable boundary at each call a program records in it (`journal:<name>:<key>`) and at
 * each pending entry it settles (`journal:<name>:<key>:resolve`). A crash "before" one lands after
 * the host call ran and before its outcome is written — where the bridge runs the call again, with
 * the same `callId`, when the program replays; "after" lands once the write is durable.
 *
 * The journal's writes are synchronous, so the probe cannot stop there and wait for the test's
 * reset: it aborts the object itself (`ctx.abort()`, which also drops the turn's unwritten rows).
 * Every write goes to the engine's journal in the same tick it would without the probe.
 */
export class ProbedJournal implements TaskStepJournal {
  readonly #journal: TaskStepJournal;
  readonly #store: ProbeStore;
  readonly #ctx: DurableObjectState;
  readonly #runId: string;

  constructor(journal: TaskStepJournal, store: ProbeStore, ctx: DurableObjectState, runId: string) {
    this.#journal = journal;
    this.#store = store;
    this.#ctx = ctx;
    this.#runId = runId;
  }

  get name(): string {
    return this.#journal.name;
  }

  lookup(executionId: string): ReturnType<TaskStepJournal["lookup"]> {
    return this.#journal.lookup(executionId);
  }

  record(entry: JournalRecordOf): RecordResultOf {
    const fields = (typeof entry === "object" && entry !== null ? entry : {}) as Partial<
      Record<keyof JournalRecordOf, unknown>
    >;
    // A malformed entry is the engine's to refuse; it is no boundary.
    if (typeof fields.key !== "string") return this.#journal.record(entry);
    const name = `${this.name}:${fields.key}`;
    this.#crash(`journal:${name}`, "before");
    const recorded = this.#journal.record(entry);
    this.#store.boundary(this.#runId, "journal", name, false, `${fields.module}.${fields.method}`);
    this.#crash(`journal:${name}`, "after");
    return recorded;
  }

  resolve(...args: Parameters<TaskStepJournal["resolve"]>): boolean {
    const [executionId, key] = args;
    if (typeof key !== "string") return this.#journal.resolve(...args);
    const name = `${this.name}:${key}:resolve`;
    this.#crash(`journal:${name}`, "before");
    const resolved = this.#journal.resolve(...args);
    if (resolved) {
      this.#store.boundary(this.#runId, "journal", name, false, this.#callOf(executionId, key));
      this.#crash(`journal:${name}`, "after");
    }
    return resolved;
  }

  deleteExecution(executionId: string): number {
    return this.#journal.deleteExecution(executionId);
  }

  /** The `module.method` recorded at `key`, for a resolve boundary. */
  #callOf(executionId: string, key: string): string | null {
    const entry = this.#journal.lookup(executionId).find((e) => e.key === key);
    return entry ? `${entry.module}.${entry.method}` : null;
  }

  /** Aborts the object where the armed crash is: at once before a write, once it is durable after one. */
  #crash(label: string, position: TestingCrashPosition): void {
    const objectId = this.#ctx.id.toString();
    if (abortSignalled(objectId)) return;
    // An "after" crash waits for its write to be durable: any other write aborts at once.
    if (abortPending(objectId)) this.#abort(label, position);
    const arm = this.#store.armed();
    if (!arm || arm.label !== label || arm.position !== position) return;
    if (position === "before") this.#abort(label, position);
    signalAbortPending(objectId);
    void this.#ctx.storage.sync().then(() => this.#abort(label, position));
  }

  #abort(label: string, position: TestingCrashPosition): void {
    signalAbort(this.#ctx.id.toString());
    this.#ctx.abort(`@durablekit/testing: a crash ${position} ${label}`);
  }
}
