import type { JournalErrorRecord } from "@durablekit/handle-journal";
import type { BridgeLimits } from "../limits";
import type { ModuleRegistry } from "../modules/module-registry";
import type { AttemptOutcome, RunInterrupt } from "../run/attempt-outcome";
import type { CallBudget } from "../run/call-budget";
import type { CallState } from "../run/call-state";
import type { HandleTable, TargetHandle } from "../run/handle-table";
import type { Answer, PrefetchedAnswers } from "../shared/wire";
import type { OutgoingValue } from "../values/values";

/**
 * Stands for the method of an object a replay registered but has not revived yet: a call on it is
 * answered from the journal without running, and a live one revives the object first
 * ({@link CallJournal.prepare}).
 */
export const NOT_REVIVED = (): undefined => undefined;

/** How {@link CallJournal.begin} starts a call: run live, or already answered (from the journal, held, halted). */
export type CallStart =
  | { kind: "live"; call: CallState }
  | { kind: "answered"; answer: Answer | Promise<Answer> };

/**
 * What a {@link CallJournal} reaches in the run it journals, given once by
 * {@link CallJournal.attach} when the run is built.
 */
export interface JournalHost {
  readonly executionId: string;
  readonly limits: BridgeLimits;
  readonly registry: ModuleRegistry;
  readonly table: HandleTable;
  readonly budget: CallBudget;
  /** False once the attempt ended (its isolate is then answered HALT). */
  readonly active: boolean;
  /** Asks the attempt to stop with `outcome` (the first request wins). */
  stop(outcome: AttemptOutcome): void;
  /**
   * Resolves what a call targets and keys it (the run's `#resolve`).
   * @throws BridgeError `bridge/unknown-method` (malformed), `bridge/handle-disposed`.
   */
  resolve(
    handleId: unknown,
    method: unknown,
    args: unknown,
    startedAt: number,
    deadline: number,
  ): CallState;
  /**
   * Reads a tagged call's arguments dry: makes the reader's refusals, and creates, revives and
   * records nothing.
   * @throws what the argument reader refuses.
   */
  readDry(call: CallState): void;
}

/**
 * What a run's call pipeline asks of replay, at fixed points of every call: {@link begin} (answered
 * from the journal, held, or live), {@link prepare} (before host code), a refusal after keying
 * ({@link refuse}), {@link admitted}, the shaped answer's outgoing objects ({@link checkOutgoing},
 * {@link noteAnswer}), {@link settle} and {@link settleError} (record, then answer), and
 * {@link interrupt}; per attempt {@link prefetch}, {@link checkAnswered}, {@link checkEnded} and
 * {@link end}. {@link LIVE} journals nothing; `ReplayCalls` (`replay-calls.ts`) is the replay.
 *
 * Invariant for every implementation: a settle method returns the answer only once what it
 * records is durable, so an answer is never delivered before its journal row.
 */
export interface CallJournal {
  /** Binds the journal to the run it serves (once, when the run is built). */
  attach(host: JournalHost): void;
  /**
   * A call arrives from the isolate with the event window and report sent with it; `key`
   * resolves and keys it. Answers how the call starts.
   * @throws what is refused before the call gets a key (the run answers it unkeyed, unrecorded).
   */
  begin(events: unknown, answered: unknown, key: () => CallState): CallStart;
  /**
   * The last step of admission before host code can run (revivers included): a replay reads a
   * tagged call's arguments dry, so a refused call revives nothing, then revives the object
   * called. True when it revived it (its access is then checked again, by the method revived).
   * @throws what the arguments or the revival refuse.
   */
  prepare(call: CallState, special: boolean): boolean;
  /**
   * In a `"read"` run, whether a call on an object not revived yet is allowed by the read-only
   * marks recorded with it (true when none were recorded: access is then decided once revived).
   */
  readOnlyUnrevived(call: CallState): boolean;
  /**
   * The object of a target handle registered before its object existed, revived now.
   * @throws BridgeError `bridge/not-replayable` when it cannot be revived; what its reviver throws.
   */
  revive(handle: TargetHandle): object;
  /**
   * Refuses what a call is passed that the journal cannot keep (`what`: a callback, a stream).
   * @throws BridgeError `bridge/not-replayable`.
   */
  checkPassable(call: CallState, what: string): void;
  /**
   * A call refused after it got its key: the record it is answered (and recorded) with, bounded,
   * or null when refusals are not recorded (the run then answers it as refused before keying).
   */
  refuse(call: CallState, error: unknown): JournalErrorRecord | null;
  /** The call is admitted (`size`: its request's bytes) and about to run; an answer when it must not run. */
  admitted(call: CallState, size: number): Answer | null;
  /**
   * Checks what a call returns can be recorded (before its size is measured).
   * @throws BridgeError `bridge/not-replayable`.
   */
  checkOutgoing(call: CallState, outgoing: OutgoingValue, fresh: readonly number[]): void;
  /**
   * Notes a call's shaped answer (`outgoing` null for a primitive; `size` its response bytes),
   * naming the objects it returns, for {@link settle} to record.
   * @throws BridgeError `bridge/not-replayable` when it cannot be recorded.
   */
  noteAnswer(call: CallState, value: unknown, outgoing: OutgoingValue | null, size: number): void;
  /** A call answered `answer` (or was refused): what it noted is recorded, then the answer is returned. */
  settle(call: CallState, answer: Answer): Answer;
  /** A call failed with `record` (`bytes` charged for it): recorded, then `answer` is returned. */
  settleError(call: CallState, record: JournalErrorRecord, bytes: number, answer: Answer): Answer;
  /** True once the call released the run (`ctx.interrupt()` recorded): its own answer is dropped. */
  interrupted(call: CallState): boolean;
  /**
   * `ctx.interrupt(payload)` of `call`: the promise its host code gets, or null when the journal
   * does not keep interrupts (the run then stops the attempt as interrupted).
   */
  interrupt(call: CallState, payload: unknown): Promise<never> | null;
  /** A call left the in-flight set (a suspending replay ends once none but interrupting ones is left). */
  finished(call: CallState): void;
  /** The interrupt the attempt was released at, once `ctx.interrupt()` was recorded. */
  readonly suspension: RunInterrupt | undefined;
  /** The answers the isolate may give itself (`ReplayOptions.answers`). */
  prefetch(): PrefetchedAnswers;
  /** Checks the isolate's report of calls it answered itself: the record of the first mismatch, or undefined. */
  checkAnswered(report: unknown): JournalErrorRecord | undefined;
  /** The program ended: the record of a journal it did not use up, or undefined. */
  checkEnded(): JournalErrorRecord | undefined;
  /** The attempt ended: held calls are answered HALT, pending interrupts rejected. */
  end(): void;
}

/**
 * The journal of a run that keeps none (`onInterrupt` `"fail"` or `"restart"`): every call is live,
 * nothing is recorded, answers pass through as they are.
 */
export const LIVE: CallJournal = Object.freeze({
  attach(): void {},
  begin(_events: unknown, _answered: unknown, key: () => CallState): CallStart {
    return { kind: "live", call: key() };
  },
  prepare: () => false,
  readOnlyUnrevived: () => false,
  revive(handle: TargetHandle): object {
    // A live run registers no object before it exists.
    if (handle.target === null) throw new Error(`${handle.label} has no object.`);
    return handle.target;
  },
  checkPassable(): void {},
  refuse: () => null,
  admitted: () => null,
  checkOutgoing(): void {},
  noteAnswer(): void {},
  settle: (_call: CallState, answer: Answer) => answer,
  settleError: (_call: CallState, _record: JournalErrorRecord, _bytes: number, answer: Answer) =>
    answer,
  interrupted: () => false,
  interrupt: () => null,
  finished(): void {},
  suspension: undefined,
  prefetch: (): PrefetchedAnswers => ({
    keys: [],
    ids: [],
    methods: [],
    seqs: [],
    ats: [],
    answers: [],
  }),
  checkAnswered: () => undefined,
  checkEnded: () => undefined,
  end(): void {},
});
