import {
  callIdOf,
  type ErrorRecord,
  fromErrorRecord,
  isErrorRecord,
  isUnsafeToRepeat,
  type OutcomeKind,
} from "@durablekit/handle-journal";
import { AnswerRefs } from "./answer-refs";
import { CallBudget } from "./call-budget";
import { CallKeys, type CallState, callLabel, HostCallContext, labelOf } from "./call-state";
import type { BridgeAccess, BridgeHostFunction } from "./context";
import { dataSize, measurable } from "./data-size";
import { Deadlines } from "./deadlines";
import {
  BridgeError,
  boundErrorRecord,
  bridgeErrorRecord,
  fromJournalFailure,
  isBridgeError,
  safeErrorRecord,
} from "./errors";
import type { BridgeEvent } from "./events";
import { disposeStray, HandleTable, type TargetHandle } from "./handle-table";
import type { BridgeLimits } from "./limits";
import type { ModuleRegistry } from "./module-registry";
import { isReadOnly } from "./read-only";
import {
  checkEvents,
  digestCallArgs,
  encodeBody,
  type JournalCallName,
  type PlainEntry,
  type Recorded,
  type RunJournal,
} from "./run-journal";
import { SignalMirrors } from "./signal-mirrors";
import { type ArgumentReader, type OutgoingValue, readArgs, writeResult } from "./values";
import {
  type Answer,
  type AnsweredCalls,
  envelopeOf,
  failure,
  HALT,
  journaled,
  type PrefetchedAnswers,
  plain,
  type Reply,
  TAG,
  tagged,
} from "./wire";

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
  | { kind: "failed"; error: ErrorRecord }
  | { kind: "interrupted"; reason: string }
  | { kind: "suspended"; interrupt: RunInterrupt }
  | { kind: "cancelled"; reason: string };

/** What a {@link Run} is built from. */
export interface RunOptions {
  executionId: string;
  attempt: number;
  access: BridgeAccess;
  limits: BridgeLimits;
  registry: ModuleRegistry;
  /** The executor's event sink, or undefined when nobody listens (then no call labels are built). */
  emit?: ((event: BridgeEvent) => void) | undefined;
  /** Called, before it runs, for the first call of a function marked unsafeToRepeat. */
  onUnsafeCall?: ((label: string) => void) | undefined;
  /** The journal of a replay run's attempt; absent for other runs (which journal nothing). */
  journal?: RunJournal | undefined;
}

/** Stands for a journaled object's method until the object is revived (a replay answers it without running). */
const NOT_REVIVED = () => undefined;

function handledRejection(error: unknown): Promise<never> {
  const promise = Promise.reject(error);
  promise.catch(() => {});
  return promise;
}

const RESPONSE_LIMIT = "bridge/limit-response-bytes";

/**
 * The most a journaled refusal's error record weighs (UTF-8 bytes of its JSON): past it, it keeps
 * its name, code and the start of its message. A refusal is the bridge's own message, but it can
 * name what the program sent (a path into its arguments).
 */
const REFUSAL_RECORD_BYTES = 1024;

/**
 * The most journal text (UTF-16 code units) one journaled call of a replay run holds beyond the
 * bytes it is charged toward `maxTotalBytes`: its key, module, method (at most 256) and argument
 * digest, the frame of its body, and a refusal's record ({@link REFUSAL_RECORD_BYTES}). At most
 * `maxCalls` admitted and `maxCalls` refused calls are journaled in a run (replayed ones count), so
 * its journal holds at most `maxTotalBytes + 2 × maxCalls × JOURNAL_CALL_OVERHEAD`. What host code
 * puts there (objects' own JSON, method names, interrupt payloads) is the host's and not counted.
 */
export const JOURNAL_CALL_OVERHEAD = 2048;

/** The longest function or method name a call may name (UTF-16 code units). */
const MAX_METHOD_CHARS = 256;

/**
 * At most this much journal text (UTF-16 code units) of answers is sent ahead with an attempt. Its
 * answers cross in the one `evaluate` message, which Workers RPC caps at 32 MiB, and the isolate
 * holds them while it runs; a journal that grew past it over many resumes replays the rest through
 * the host.
 */
export const PREFETCH_MAX_CHARS = 4 * 1024 * 1024;

/** The refusal of a function, callback or stream in a replay run, saying what to do instead. */
function notReplayable(call: CallState, what: string, instead?: string): BridgeError {
  return new BridgeError(
    "bridge/not-replayable",
    `${callLabel(call)} (call ${call.key}) got ${what}, which a replay run cannot journal: ${instead ?? "pass data or objects instead"}, or mark the host function unsafeToRepeat (then a replay that reaches it fails the run).`,
  );
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null | undefined)?.then === "function";
}

/**
 * One attempt of one execution, host side: the handle table, the budget the limits check, the
 * calls in flight and their deadlines. Every call from the isolate, to an exported function or a
 * handle's method, enters through {@link invoke} and takes the same steps: resolve what is called
 * and check access ({@link #resolve}), check the limits (`CallBudget`), read the arguments
 * ({@link #argumentReader}), key it (`CallKeys`), run it with its own context, and shape the
 * response ({@link #shape}). In a replay run ({@link RunOptions.journal}) a keyed call is first
 * looked up in the journal and answered from it without running; a live one is recorded (refusals
 * included) before its answer is delivered, as a `"journaled"` envelope.
 */
export class Run {
  readonly executionId: string;
  readonly attempt: number;
  readonly access: BridgeAccess;
  /** Epoch ms when this attempt times out. */
  readonly deadline: number;
  /** Settles with the outcome when the attempt is stopped from the host side (timeout, cancel, interrupt). */
  readonly stopped: Promise<AttemptOutcome>;

  readonly #limits: BridgeLimits;
  readonly #table: HandleTable;
  readonly #budget: CallBudget;
  readonly #deadlines: Deadlines;
  readonly #keys = new CallKeys();
  readonly #mirrors = new SignalMirrors();
  readonly #emitEvent: RunOptions["emit"];
  readonly #onUnsafeCall: RunOptions["onUnsafeCall"];
  readonly #registry: ModuleRegistry;
  readonly #journal: RunJournal | undefined;
  #stop!: (outcome: AttemptOutcome) => void;
  #active = true;
  #stopRequested = false;
  /** Set once a replay run's `ctx.interrupt()` released it: new calls are held, in-flight ones drain. */
  #suspension: RunInterrupt | undefined;
  /** Calls held while suspending, answered HALT when the attempt ends. */
  readonly #held: Array<(answer: Answer) => void> = [];
  /**
   * The journal entries sent to the isolate to answer itself, not yet reported answered, by seq:
   * the module handle and function each was recorded for.
   */
  readonly #prefetched = new Map<
    number,
    { id: number; method: string; bytes: number; refused: boolean }
  >();
  /** Calls of a replay run refused after they got a key (journaled refusals), replayed ones included. */
  #refused = 0;
  /** Rejects the `ctx.interrupt()` promises of a replay run when the attempt ends. */
  readonly #interrupts: Array<(error: unknown) => void> = [];

  constructor(options: RunOptions) {
    const limits = options.limits;
    this.executionId = options.executionId;
    this.attempt = options.attempt;
    this.access = options.access;
    this.#limits = limits;
    this.#table = new HandleTable(options.registry.hosts, limits.maxHandles);
    this.#budget = new CallBudget(limits);
    this.#emitEvent = options.emit;
    this.#onUnsafeCall = options.onUnsafeCall;
    this.#registry = options.registry;
    this.#journal = options.journal;
    this.stopped = new Promise((resolve) => {
      this.#stop = resolve;
    });
    this.#deadlines = new Deadlines(
      limits.runTimeoutMs,
      limits.callTimeoutMs,
      this.#budget.inflight,
      {
        runTimedOut: () => this.#timeOut(),
        callTimedOut: (call) =>
          this.#cutOff(
            call,
            new BridgeError(
              "bridge/call-timeout",
              `${callLabel(call)} passed its deadline (callTimeoutMs ${limits.callTimeoutMs}, or the run's end) and was cut off.`,
            ),
          ),
      },
    );
    this.deadline = this.#deadlines.run;
  }

  #timeOut(): void {
    this.stop(this.#timedOut());
  }

  #timedOut(): AttemptOutcome {
    return {
      kind: "failed",
      error: bridgeErrorRecord(
        "bridge/run-timeout",
        `The run took longer than ${this.#limits.runTimeoutMs} ms (runTimeoutMs) and was stopped.`,
      ),
    };
  }

  /**
   * The outcome of an attempt whose program ended on its own: a result or error that arrives after
   * the run's deadline is a `bridge/run-timeout` (a CPU-bound program can hold the thread past its
   * deadline so that no timer fires; in production `cpuMs` ends it, locally nothing does).
   */
  checkDeadline(outcome: AttemptOutcome): AttemptOutcome {
    if (outcome.kind === "completed" || outcome.kind === "failed") {
      if (Date.now() > this.deadline) return this.#timedOut();
    }
    return outcome;
  }

  /** Calls admitted so far. */
  get calls(): number {
    return this.#budget.calls;
  }

  /** Signals mirrored now (for tests: a refused or ended call leaves none behind). */
  get mirrored(): number {
    return this.#mirrors.size;
  }

  /** Objects and functions held now. */
  get held(): number {
    return this.#table.held;
  }

  /** Asks the attempt to stop with `outcome` (the first request wins). */
  stop(outcome: AttemptOutcome): void {
    if (this.#stopRequested) return;
    this.#stopRequested = true;
    this.#stop(outcome);
  }

  /**
   * Ends the attempt: refuses new calls, cuts off calls in flight (their signals abort with
   * `bridge/run-ended`), aborts mirrored signals and disposes every object and function still held.
   * Returns how many were disposed.
   */
  end(): number {
    if (!this.#active) return 0;
    this.#active = false;
    this.#stopRequested = true;
    this.#deadlines.clear();
    const ended = new BridgeError(
      "bridge/run-ended",
      "The run ended while this call was in flight.",
    );
    // Host code sees its signal abort with `bridge/run-ended`; the isolate is answered HALT, so
    // the program's pending calls never settle and it sends nothing more.
    for (const call of [...this.#budget.inflight]) this.#cutOff(call, ended, HALT);
    for (const hold of this.#held.splice(0)) hold(HALT);
    const interrupted = new BridgeError(
      "bridge/interrupted",
      "The run was released by ctx.interrupt(); a resume answers the program with its value, without running this call again.",
    );
    for (const reject of this.#interrupts.splice(0)) reject(interrupted);
    this.#mirrors.abortAll(ended);
    return this.#table.disposeAll();
  }

  /**
   * `ctx.interrupt(payload)`. In a `"fail"` or `"restart"` run: stops the attempt as interrupted
   * (a string payload is the reason) and rejects for the calling host code. In a replay run: records
   * the interrupt at the call's key (payload journaled), then holds new calls and lets the calls
   * in flight finish and be journaled before the attempt ends as suspended; the promise rejects
   * with `bridge/interrupted` when the attempt ends.
   */
  interrupt(call: CallState, payload: unknown): Promise<never> {
    const journal = this.#journal;
    if (journal === undefined || call.name === undefined) {
      const text = typeof payload === "string" ? payload : `${callLabel(call)} interrupted the run`;
      this.stop({ kind: "interrupted", reason: text });
      return handledRejection(
        new BridgeError("bridge/interrupted", `The run was interrupted: ${text}.`),
      );
    }
    if (call.done || call.interrupted || !this.#active) {
      return handledRejection(
        new BridgeError(
          "bridge/run-ended",
          `ctx.interrupt() of ${callLabel(call)} (call ${call.key}) came after the call ended or the run was already released; interrupt while the call is running, once.`,
        ),
      );
    }
    const max = this.#limits.maxInterruptBytes;
    let body: string;
    try {
      // Bounded before anything is written: a payload over the limit releases nothing (the run
      // goes on), and what is admitted is stored split over rows where it outgrows one.
      dataSize(payload, max, "payload", "bridge/limit-interrupt-bytes", "maxInterruptBytes");
      body = encodeBody(payload, { events: call.events, bytes: call.charged });
    } catch (error) {
      if (isBridgeError(error, "bridge/limit-interrupt-bytes")) {
        return handledRejection(
          new BridgeError(
            "bridge/limit-interrupt-bytes",
            `The payload of ctx.interrupt() in ${callLabel(call)} encodes to more than ${max} bytes (maxInterruptBytes); the run was not released and goes on. Interrupt with less (e.g. an id of the data), or raise maxInterruptBytes.`,
            { cause: error },
          ),
        );
      }
      return handledRejection(
        new BridgeError(
          "bridge/unserializable",
          `The payload of ctx.interrupt() is not data the journal can keep: ${(error as Error).message}`,
          { cause: error },
        ),
      );
    }
    try {
      if (call.marker !== undefined) journal.resolve(call.key, call.marker, "interrupt", body);
      else journal.record(call.name, "interrupt", body);
    } catch (error) {
      this.#failRun(error);
      return handledRejection(fromJournalFailure(error));
    }
    call.interrupted = true;
    this.#suspend(call.key, payload);
    return new Promise<never>((_resolve, reject) => {
      this.#interrupts.push(reject);
    }).catch((error: unknown) => handledRejection(error));
  }

  /** The interrupt a replay run was released at, once `ctx.interrupt()` was called. */
  get suspension(): RunInterrupt | undefined {
    return this.#suspension;
  }

  /** A replay run is released at `key`: the first interrupt wins; the attempt ends once no call is in flight. */
  #suspend(key: string, payload: unknown): void {
    if (this.#suspension !== undefined) return;
    this.#suspension = { key, callId: callIdOf(this.executionId, key), payload };
    this.#stopWhenDrained();
  }

  /** Ends a suspending attempt once every call in flight (but the interrupting ones) answered. */
  #stopWhenDrained(): void {
    const suspension = this.#suspension;
    if (suspension === undefined) return;
    for (const call of this.#budget.inflight) if (!call.interrupted) return;
    this.stop({ kind: "suspended", interrupt: suspension });
  }

  /** A call that waits for the end of the attempt (a suspending run answers nothing more). */
  #hold(): Promise<Answer> {
    return new Promise((resolve) => this.#held.push(resolve));
  }

  /**
   * The journal (or the replay) failed: the attempt ends failed with that error, a journal's
   * failure named by its bridge code with it as `cause` ({@link fromJournalFailure}); the isolate
   * is halted.
   */
  #failRun(error: unknown): Answer {
    this.stop({ kind: "failed", error: safeErrorRecord(fromJournalFailure(error)) });
    return HALT;
  }

  /**
   * A replay run whose program ended: fails with `bridge/replay-diverged` when the journal holds
   * calls the program did not make again. Undefined for any other run.
   */
  checkJournalEnded(): ErrorRecord | undefined {
    try {
      this.#journal?.checkEnded();
      return undefined;
    } catch (error) {
      return safeErrorRecord(fromJournalFailure(error));
    }
  }

  /** The program disposed an object or function (`using` / `[Symbol.dispose]`). */
  release(handleId: unknown): void {
    if (typeof handleId === "number") this.#table.dispose(handleId);
  }

  /** The program aborted a signal it had passed as an argument. */
  abortSignal(signalId: unknown, reason: unknown): void {
    this.#mirrors.abort(signalId, reason);
  }

  /**
   * The one entry point of every call from the isolate. Always answers (see `Answer`), never
   * rejects: what host code throws travels as an error record. A call whose host code returns
   * synchronously is answered synchronously, with no promise for Workers RPC to wait on.
   */
  invoke(
    handleId: unknown,
    method: unknown,
    args: unknown,
    kind: unknown,
    events?: unknown,
    answered?: unknown,
  ): Answer | Promise<Answer> {
    if (this.#journal) return this.#invokeJournaled(handleId, method, args, kind, events, answered);
    const startedAt = Date.now();
    // A program looping on calls can starve the run's timer: every call also checks the deadline.
    if (startedAt >= this.deadline) this.#timeOut();
    let call: CallState;
    try {
      call = this.#admit(handleId, method, args, kind === "tagged", startedAt);
    } catch (error) {
      if (this.#emitEvent) {
        this.#emit(`${String(handleId)}.${String(method)}`, undefined, "refused", error, startedAt);
      }
      // After the run ended the isolate is halted: this is the last call the host sees from it.
      return this.#active ? failure(safeErrorRecord(error)) : HALT;
    }
    return this.#perform(call);
  }

  /**
   * A call of a replay run: keyed, then answered from the journal when it is recorded there, else
   * admitted and run live; every answer after keying is recorded before it is delivered.
   */
  #invokeJournaled(
    handleId: unknown,
    method: unknown,
    args: unknown,
    kind: unknown,
    rawEvents: unknown,
    answered: unknown,
  ): Answer | Promise<Answer> {
    const journal = this.#journal as RunJournal;
    const startedAt = Date.now();
    if (startedAt >= this.deadline) this.#timeOut();
    if (!this.#active) return HALT;
    // A released run answers nothing more: the call is neither run nor journaled.
    if (this.#suspension !== undefined) return this.#hold();
    // The calls the isolate answered itself came before this one: they take their keys first.
    if (answered !== undefined) {
      try {
        this.#checkAnswered(answered);
      } catch (error) {
        return this.#failRun(error);
      }
    }
    let call: CallState;
    let windowBytes = 0;
    try {
      // What the isolate sends is checked and bounded before anything of it can be stored: its
      // event window, which the journal keeps, is charged to the call as request bytes.
      const checked = checkEvents(rawEvents);
      windowBytes = checked?.bytes ?? 0;
      this.#budget.checkWindow(windowBytes, this.#refused);
      call = this.#resolve(handleId, method, args, startedAt, this.#deadlines.forCall(startedAt));
      call.events = checked?.window;
    } catch (error) {
      // Refused before it got a key: answered as in any run, not journaled.
      if (this.#emitEvent) {
        this.#emit(`${String(handleId)}.${String(method)}`, undefined, "refused", error, startedAt);
      }
      return failure(safeErrorRecord(error));
    }
    const name = this.#journalName(call);
    call.name = name;
    let replayed: ReturnType<RunJournal["next"]>;
    try {
      replayed = journal.next(name);
    } catch (error) {
      return this.#failRun(error);
    }
    if (replayed.kind !== "live") {
      // Counted as it was when it ran: the limits hold across resumes as in one attempt.
      this.#budget.admit(replayed.bytes);
      if (replayed.kind === "interrupt") {
        // Recorded as an interrupt nobody resumed: released again, without running the call.
        this.#suspend(call.key, replayed.payload);
        return this.#hold();
      }
      if (replayed.kind === "error") {
        if (replayed.refused) this.#refused++;
        return journaled(replayed.seq, replayed.at, failure(replayed.record));
      }
      try {
        return journaled(replayed.seq, replayed.at, this.#replayAnswer(call, replayed.value));
      } catch (error) {
        return this.#failRun(error);
      }
    }
    // The window is journaled with whatever answers the call (a refusal too): charged now.
    this.#budget.chargeWindow(windowBytes);
    call.charged = windowBytes;
    try {
      if (call.refusal) throw call.refusal;
      // Every refusal is decided before any host code runs: a journaled object's reviver and the
      // revivers of journaled objects passed as arguments run only for a call that is admitted.
      this.#checkAccess(call);
      const size = this.#budget.check(call, kind === "tagged");
      if (kind === "tagged") readArgs(call.args, this.#argumentReader(call, true));
      if (call.fn === NOT_REVIVED) {
        this.#reviveFor(call);
        // Access by the method of the object as revived now (a deploy may have changed its marks).
        this.#checkAccess(call);
      }
      if (kind === "tagged") call.args = readArgs(call.args, this.#argumentReader(call));
      this.#budget.admit(size);
      call.charged += size;
    } catch (error) {
      // Refused after keying: journaled like any answer, so the same call is refused on replay.
      // Refusals are counted, replayed ones too (past maxCalls of them a call is refused unkeyed,
      // unjournaled), and their records bounded, so refused calls cannot grow the journal without
      // bound either.
      this.#refused++;
      this.#releaseArguments(call);
      if (this.#emitEvent) this.#emit(callLabel(call), call.key, "refused", error, startedAt);
      const { record } = boundErrorRecord(
        safeErrorRecord(error),
        REFUSAL_RECORD_BYTES,
        "the bound of a refusal's record",
      );
      return this.#recordAnswer(
        call,
        "error",
        encodeBody(record, { events: call.events, bytes: call.charged, refused: true }),
        failure(record),
      );
    }
    if (isUnsafeToRepeat(call.fn)) {
      // The marker is durable before the call runs: a replay that finds it unsettled fails the run.
      try {
        call.marker = journal.record(name, "unsafe", encodeBody(null, { events: call.events })).seq;
      } catch (error) {
        return this.#failRun(error);
      }
    }
    return this.#perform(call);
  }

  // ── Answered in the isolate (wire v5) ──────────────────────────────────────

  /**
   * The journal's plain answers of top-level calls, for the isolate to answer those calls itself
   * (`ReplayOptions.answers`); empty for a run that is not a replay run. Entries whose value would
   * register a handle, whose module is not configured now, or past {@link PREFETCH_MAX_CHARS} of
   * journal text, are left to the host.
   */
  prefetch(): PrefetchedAnswers {
    const out: PrefetchedAnswers = {
      keys: [],
      ids: [],
      methods: [],
      seqs: [],
      ats: [],
      answers: [],
    };
    const journal = this.#journal;
    if (journal === undefined) return out;
    let budget = PREFETCH_MAX_CHARS;
    for (const entry of journal.plain) {
      // Over the budget, an answer stays on the host, which answers its call as before.
      if (entry.chars > budget) continue;
      const module = this.#registry.bySpecifier.get(entry.module);
      if (module?.kind !== "host") continue;
      const answer =
        entry.kind === "error" ? failure(entry.record) : this.#plainAnswer(entry, entry.value);
      if (answer === null) continue;
      budget -= entry.chars;
      // Invariant: the isolate can report as answered only an entry it was sent.
      this.#prefetched.set(entry.seq, {
        id: module.handleId,
        method: entry.method,
        bytes: entry.bytes,
        refused: entry.refused,
      });
      out.keys.push(entry.key);
      out.ids.push(module.handleId);
      out.methods.push(entry.method);
      out.seqs.push(entry.seq);
      out.ats.push(entry.at);
      out.answers.push(answer);
    }
    return out;
  }

  /** The wire answer of a journaled value that holds no handle, or null when it would register one. */
  #plainAnswer(entry: PlainEntry, value: unknown): Answer | null {
    if ((typeof value !== "object" && typeof value !== "function") || value === null) {
      return plain(value);
    }
    const fresh: number[] = [];
    try {
      const outgoing = writeResult(value, this.#table, entry.module, entry.key, fresh);
      if (fresh.length === 0)
        return outgoing.special ? tagged(outgoing.wire) : plain(outgoing.wire);
    } catch {
      // Left to the host, which answers it as before.
    }
    for (const id of fresh) this.#table.forget(id);
    return null;
  }

  /**
   * The calls the isolate reports it answered itself (in an `invoke` or the attempt's outcome),
   * checked exactly as if each had come to the host: in order, each is keyed, its arguments
   * digested here and compared with the journal entry at its key, and counted; the entry must be
   * the one the isolate used. Answers the record of the first mismatch, or undefined.
   */
  checkAnsweredInIsolate(list: unknown): ErrorRecord | undefined {
    if (this.#journal === undefined || list === undefined) return undefined;
    try {
      this.#checkAnswered(list);
      return undefined;
    } catch (error) {
      return safeErrorRecord(fromJournalFailure(error));
    }
  }

  /**
   * {@link checkAnsweredInIsolate}, throwing.
   * @throws BridgeError `bridge/replay-diverged` (or `bridge/unsafe-to-repeat`) at the first call
   *   that is not the journal's entry the isolate answered it with.
   */
  #checkAnswered(report: unknown): void {
    const journal = this.#journal as RunJournal;
    const { seqs, args: argsList } = (report ?? {}) as Partial<AnsweredCalls>;
    if (!Array.isArray(seqs) || !Array.isArray(argsList) || seqs.length !== argsList.length) {
      throw new BridgeError(
        "bridge/invalid-argument",
        "Malformed report of calls answered in the isolate (wire mismatch).",
      );
    }
    for (let i = 0; i < seqs.length; i++) {
      const seq: unknown = seqs[i];
      const args: unknown = argsList[i];
      const sent = typeof seq === "number" ? this.#prefetched.get(seq) : undefined;
      if (sent === undefined || !Array.isArray(args)) {
        throw new BridgeError(
          "bridge/replay-diverged",
          `The isolate reported a call it answered with journal entry ${String(seq)}, which the host did not send it (or without its arguments); the attempt is not trusted. Start a new execution.`,
        );
      }
      const now = Date.now();
      // The call the isolate answered with an entry is a call of that entry's module function.
      const call = this.#resolve(sent.id, sent.method, args, now, now);
      const entry = journal.match(this.#journalName(call));
      if ((entry?.outcome !== "value" && entry?.outcome !== "error") || entry.seq !== seq) {
        throw new BridgeError(
          "bridge/replay-diverged",
          `The replay diverged at call ${call.key} (${callLabel(call)}): the isolate answered it with journal entry ${seq}, which is not the entry recorded at that key. Start a new execution.`,
        );
      }
      this.#prefetched.delete(seq as number);
      this.#budget.admit(sent.bytes);
      if (sent.refused) this.#refused++;
    }
  }

  /** What the journal records a call as: its key, module (`"<specifier>#<Kind>"` for an object), method and argument digest. */
  #journalName(call: CallState): JournalCallName {
    const handle = call.handle;
    const table = this.#table;
    return {
      key: call.key,
      module: handle.kind === "module" ? handle.module.specifier : handle.label,
      method: call.method,
      argsDigest: digestCallArgs(call.args, (id) => {
        const entry = typeof id === "number" ? table.get(id) : undefined;
        if (entry === undefined) return "?";
        return entry.kind === "module" ? entry.module.specifier : entry.creatorKey;
      }),
    };
  }

  /** The object of the host module configured now under `specifier` (what revives its handles). */
  readonly #hostObject = (specifier: string): object | undefined => {
    const entry = this.#registry.bySpecifier.get(specifier);
    return entry?.kind === "host" ? entry.object : undefined;
  };

  /** A live call on a journaled object revives it first (through its module's revive map). */
  #reviveFor(call: CallState): void {
    if (call.fn !== NOT_REVIVED) return;
    const handle = call.handle as TargetHandle;
    const target = this.#table.liveTarget(handle, this.#hostObject);
    const fn = (target as Record<string, unknown>)[call.method];
    if (typeof fn !== "function") {
      throw new BridgeError(
        "bridge/unknown-method",
        `${labelOf(handle, call.method)} is not a function of the revived object; its [handle.revive] function must return an object with the methods the original had.`,
      );
    }
    call.fn = fn as BridgeHostFunction;
    call.thisArg = target;
  }

  /** The answer of a value read from the journal: its handles registered lazily, shaped as a live answer is. */
  #replayAnswer(call: CallState, value: unknown): Answer {
    if ((typeof value !== "object" && typeof value !== "function") || value === null) {
      return plain(value);
    }
    const handle = call.handle;
    const specifier = handle.kind === "module" ? handle.module.specifier : handle.specifier;
    const outgoing = writeResult(value, this.#table, specifier, call.key, []);
    return outgoing.special ? tagged(outgoing.wire) : plain(outgoing.wire);
  }

  /**
   * Records a live call's answer (or resolves its unsafeToRepeat marker) and answers it as a
   * `"journaled"` envelope. A marked call whose value the journal cannot keep (a function, a
   * stream) leaves its marker unsettled and is answered as in any run: a replay fails there.
   */
  #recordAnswer(
    call: CallState,
    outcome: OutcomeKind,
    body: string | null,
    answer: Answer,
  ): Answer {
    const journal = this.#journal as RunJournal;
    if (body === null) return answer;
    let recorded: Recorded;
    try {
      recorded =
        call.marker === undefined
          ? journal.record(call.name as JournalCallName, outcome, body)
          : journal.resolve(call.key, call.marker, outcome, body);
    } catch (error) {
      return this.#failRun(error);
    }
    return journaled(recorded.seq, recorded.at, answer);
  }

  /** Resolve (which keys the call), access, limits, arguments; then the call counts. */
  #admit(
    handleId: unknown,
    method: unknown,
    args: unknown,
    special: boolean,
    startedAt: number,
  ): CallState {
    if (!this.#active) {
      throw new BridgeError("bridge/run-ended", "The run has ended; no more calls are answered.");
    }
    const deadline = this.#deadlines.forCall(startedAt);
    const call = this.#resolve(handleId, method, args, startedAt, deadline);
    this.#checkAccess(call);
    const size = this.#budget.check(call, special);
    if (special) {
      try {
        call.args = readArgs(call.args, this.#argumentReader(call));
      } catch (error) {
        // A refused call releases the signal mirrors and callbacks it registered before the refusal.
        this.#releaseArguments(call);
        throw error;
      }
    }
    if (this.#onUnsafeCall && isUnsafeToRepeat(call.fn)) this.#onUnsafeCall(callLabel(call));
    this.#budget.admit(size);
    return call;
  }

  /**
   * Runs an admitted call: synchronously answered when its host code returns a value or throws;
   * otherwise answered when its promise settles or the call is cut off, whichever is first.
   */
  #perform(call: CallState): Answer | Promise<Answer> {
    this.#budget.inflight.add(call);
    this.#deadlines.watch();
    let out: unknown;
    try {
      out = call.fn.call(call.thisArg, call.args, new HostCallContext(this, call));
    } catch (error) {
      return this.#fail(call, error);
    }
    if (call.interrupted) return this.#interruptedAnswer(call, out);
    if (!isThenable(out)) return this.#respond(call, out);
    return new Promise<Answer>((resolve) => {
      call.resolve = resolve;
      out.then(
        (value) => {
          if (call.done || !this.#active || call.interrupted) {
            disposeStray(value, (v) => this.#table.holds(v));
          } else resolve(this.#respond(call, value));
        },
        (error: unknown) => {
          if (!call.done && !call.interrupted) resolve(this.#fail(call, error));
        },
      );
    });
  }

  /**
   * A replay call that interrupted the run synchronously: what its host code returned is dropped
   * (the resume value answers the program); the call waits for the attempt's end.
   */
  #interruptedAnswer(call: CallState, out: unknown): Promise<Answer> {
    if (isThenable(out)) {
      out.then(
        (value) => disposeStray(value, (v) => this.#table.holds(v)),
        () => {},
      );
    } else disposeStray(out, (v) => this.#table.holds(v));
    return new Promise<Answer>((resolve) => {
      call.resolve = resolve;
    });
  }

  #respond(call: CallState, value: unknown): Answer {
    let answer: Answer;
    try {
      answer = this.#shape(value, call);
    } catch (error) {
      return this.#fail(call, error);
    }
    this.#finish(call, false, undefined);
    if (call.journal === undefined) return answer;
    return call.journal === null
      ? answer
      : this.#recordAnswer(call, call.journal.outcome, call.journal.body, answer);
  }

  /** A call failed; in a replay run its error is journaled, unless `journal` is false (the attempt is ending under it). */
  #fail(call: CallState, error: unknown, journal = true): Answer {
    this.#finish(call, true, error);
    const record = this.#errorRecord(error, call);
    const answer = failure(record);
    if (!journal || call.name === undefined || call.interrupted) return answer;
    return this.#recordAnswer(
      call,
      "error",
      encodeBody(record, { events: call.events, bytes: call.charged }),
      answer,
    );
  }

  /**
   * The record of an error a call answers with, measured and charged like a response: over
   * `maxResponseBytes` (or what is left of `maxTotalBytes`) it keeps only name, code and a
   * truncated message, and says so. Never throws.
   */
  #errorRecord(error: unknown, call: CallState): ErrorRecord {
    const limits = this.#limits;
    const left = Math.max(0, limits.maxTotalBytes - this.#budget.bytes);
    const max = Math.min(limits.maxResponseBytes, left);
    const limitName = max === left ? "maxTotalBytes (left)" : "maxResponseBytes";
    const { record, bytes } = boundErrorRecord(safeErrorRecord(error), max, limitName);
    this.#budget.chargeError(bytes);
    if (call.charged !== undefined) call.charged += bytes;
    return record;
  }

  /** The call is answered: it leaves the in-flight set and releases what it was passed. */
  #finish(call: CallState, failed: boolean, error: unknown): void {
    call.done = true;
    this.#budget.inflight.delete(call);
    if (call.callbacks || call.signals) this.#releaseArguments(call);
    if (this.#suspension !== undefined) this.#stopWhenDrained();
    if (this.#emitEvent) {
      this.#emit(callLabel(call), call.key, failed ? "error" : "ok", error, call.startedAt);
    }
  }

  /** Ends a call before its host code settled: its signal aborts and the program gets `reason`. */
  #cutOff(call: CallState, reason: BridgeError, answer?: Answer): void {
    if (call.done) return;
    call.cutOff = reason;
    call.controller?.abort(reason);
    // Cut off by the attempt's end (`answer` HALT), a call is not journaled: a replay runs it again.
    const failed = this.#fail(call, reason, answer === undefined);
    call.resolve?.(answer ?? failed);
  }

  // ── Resolution ─────────────────────────────────────────────────────────────

  /**
   * Resolves what a call targets: the handle is live (then the call takes its key) and the method
   * is a function of it (a prototype method for an object, `""` for a function handle). Answers
   * the call's state, keyed but not yet checked for access or counted.
   * @throws BridgeError `bridge/unknown-method`, `bridge/handle-disposed`.
   */
  #resolve(
    handleId: unknown,
    method: unknown,
    args: unknown,
    startedAt: number,
    deadline: number,
  ): CallState {
    if (
      typeof handleId !== "number" ||
      typeof method !== "string" ||
      method.length > MAX_METHOD_CHARS ||
      !Array.isArray(args)
    ) {
      throw new BridgeError("bridge/unknown-method", "Malformed bridge call.");
    }
    const handle = this.#table.get(handleId);
    if (!handle) {
      throw new BridgeError(
        "bridge/handle-disposed",
        `The object was disposed (or belongs to another run); it cannot be called any more.`,
      );
    }
    // Keyed as soon as its handle is known, before any refusal: a call refused from here on (no
    // such method, access, limits, arguments) still consumes its key, so a limit or a host module
    // changed between attempts cannot shift the keys of the calls after it.
    const key = this.#keys.next(handle);
    let fn: unknown;
    let unknown: BridgeError | undefined;
    let thisArg: unknown;
    if (handle.kind === "module") {
      fn = handle.module.functions.get(method);
      thisArg = handle.module.object;
    } else if (handle.kind === "target") {
      // Only prototype methods recorded when the object was registered, never own data properties.
      if (handle.methods.has(method)) {
        fn =
          handle.target === null ? NOT_REVIVED : (handle.target as Record<string, unknown>)[method];
      }
      thisArg = handle.target;
    } else if (method === "") {
      fn = handle.fn;
    }
    if (typeof fn !== "function") {
      const refusal = new BridgeError(
        "bridge/unknown-method",
        `${labelOf(handle, method)} is not a function of this ${handle.kind === "module" ? "module" : "object"}.`,
      );
      // A replay run journals the refusal under the key the call took (see #invokeJournaled).
      if (!this.#journal) throw refusal;
      fn = () => {
        throw refusal;
      };
      unknown = refusal;
    }
    return {
      ...(unknown === undefined ? {} : { refusal: unknown }),
      key,
      handle,
      method,
      fn: fn as BridgeHostFunction,
      thisArg,
      args,
      deadline,
      startedAt,
      done: false,
    };
  }

  /**
   * In a `"read"` run, refuses a function not marked read-only (after the call got its key).
   * @throws BridgeError `bridge/access-denied`.
   */
  #checkAccess(call: CallState): void {
    if (this.access !== "read") return;
    if (call.fn === NOT_REVIVED) {
      // A journaled object not revived yet: decided by the read-only marks recorded with it, so
      // its reviver (host code) never runs for a refused call. Without recorded marks (a journal
      // of an earlier version) it is decided once the object is revived.
      const marks = (call.handle as TargetHandle).readOnly;
      if (marks === undefined || marks.has(call.method)) return;
    } else if (isReadOnly(call.fn)) return;
    throw new BridgeError(
      "bridge/access-denied",
      `${labelOf(call.handle, call.method)} may change state and this run has read-only access; it did not run. Run with access "read-write" to call it.`,
    );
  }

  // ── Arguments ──────────────────────────────────────────────────────────────

  /**
   * Resolves what the isolate passed back in one call's arguments: handle ids into the targets and
   * functions they name, signal records into mirrored AbortSignals, and callbacks into functions
   * that throw `bridge/callback-expired` once the call returned. What it creates is recorded on the
   * call, for {@link #releaseArguments}.
   *
   * A `dry` reader only makes the reader's refusals (a disposed handle; in a replay run a callback
   * or stream) and creates, revives and records nothing: a replay run reads a call's arguments
   * dry first, so a refused call revives none of the objects it was passed.
   */
  #argumentReader(call: CallState, dry = false): ArgumentReader {
    const table = this.#table;
    const mirrors = this.#mirrors;
    // Whether a journaled object's method is unsafeToRepeat is known once it is revived.
    const unknownFn = dry && call.fn === NOT_REVIVED;
    return {
      handle: (id: unknown, path: string): unknown => {
        const entry = typeof id === "number" ? table.get(id) : undefined;
        if (!entry || entry.kind === "module") {
          throw new BridgeError(
            "bridge/handle-disposed",
            `The object passed at ${path} was disposed or belongs to another run.`,
            { path },
          );
        }
        if (dry) return null;
        if (entry.kind === "function") return entry.fn;
        return table.liveTarget(entry, this.#hostObject);
      },
      signal: (id: unknown, aborted: boolean, reason: unknown): AbortSignal => {
        if (dry) return null as never;
        const controller = new AbortController();
        if (aborted) {
          controller.abort(isErrorRecord(reason) ? fromErrorRecord(reason) : undefined);
        } else if (typeof id === "number") {
          mirrors.add(id, controller);
          call.signals ??= [];
          call.signals.push([id, controller]);
        }
        return controller.signal;
      },
      ...(this.#journal === undefined || unknownFn || isUnsafeToRepeat(call.fn)
        ? {}
        : {
            stream: (_stream: ReadableStream, path: string): ReadableStream => {
              throw notReplayable(call, `a ReadableStream (at ${path})`);
            },
          }),
      callback: (stub: (...args: unknown[]) => unknown) => {
        if (this.#journal !== undefined && !unknownFn && !isUnsafeToRepeat(call.fn)) {
          throw notReplayable(call, "a callback");
        }
        if (dry) return null as never;
        call.callbacks ??= [];
        call.callbacks.push(stub);
        return (...args: unknown[]): Promise<unknown> => {
          // A callback lives exactly as long as the call it was passed to.
          if (call.done || !this.#active) {
            return handledRejection(
              new BridgeError(
                "bridge/callback-expired",
                `A callback passed to ${callLabel(call)} (call ${call.key}) was used after that call returned; a callback is valid only during the call it is passed to. Use it before returning, or return an object the program can call instead.`,
              ),
            );
          }
          return this.#callBack(call, stub, args);
        };
      },
    };
  }

  /**
   * Host code calls a program callback passed to `call`: it counts toward `maxCalls`, its arguments
   * cross exactly like a call's result (objects and functions registered in the run's handle table,
   * so access, limits, context and disposal apply; errors and URLs as records; measured against
   * `maxResponseBytes` and charged to `maxTotalBytes`), and what the callback returns or throws
   * crosses back like a call's arguments (handles, signals and callbacks resolved; an error record
   * rethrown as an Error).
   */
  async #callBack(
    call: CallState,
    stub: (...args: unknown[]) => unknown,
    args: unknown[],
  ): Promise<unknown> {
    this.#budget.countCallback(() => `a callback passed to ${callLabel(call)}`);
    const wire = this.#shape(args, call, "callback args");
    const reply = (await stub(wire)) as Reply;
    const envelope = envelopeOf(reply);
    if (envelope === null) return reply;
    switch (envelope[TAG]) {
      case "tagged":
        if (call.done || !this.#active) return undefined;
        return readArgs([envelope.value], this.#argumentReader(call))[0];
      case "error":
        throw isErrorRecord(envelope.record)
          ? fromErrorRecord(envelope.record)
          : new Error("The callback failed.");
      default:
        throw new Error("The callback's reply is not a wire Reply (wire version mismatch).");
    }
  }

  /** A call ended: its callbacks' stubs are disposed and its mirrored signals dropped. */
  #releaseArguments(call: CallState): void {
    if (call.callbacks) {
      for (const stub of call.callbacks) {
        try {
          (stub as { [Symbol.dispose]?: () => void })[Symbol.dispose]?.();
        } catch {
          // The isolate may already be gone.
        }
      }
    }
    if (call.signals) {
      for (const [id, controller] of call.signals) this.#mirrors.remove(id, controller);
    }
  }

  // ── Responses ──────────────────────────────────────────────────────────────

  /**
   * Shapes what a call's host code returned into the call's answer: RpcTargets and functions are
   * registered in the run's handle table (keyed below the call), errors and URLs become tagged
   * records, and the data part is measured against `maxResponseBytes` and counted toward
   * `maxTotalBytes`. A primitive is answered as itself after one size check. A refused response
   * releases what it registered and disposes the objects it returned that the program does not
   * already hold.
   * @throws BridgeError `bridge/limit-response-bytes`, `bridge/limit-total-bytes`,
   * `bridge/limit-handles`, `bridge/unserializable`.
   */
  #shape(value: unknown, call: CallState, root = "result"): Answer {
    const table = this.#table;
    const budget = this.#budget;
    const max = this.#limits.maxResponseBytes;
    if ((typeof value !== "object" && typeof value !== "function") || value === null) {
      const size = dataSize(value, max, root, RESPONSE_LIMIT, "maxResponseBytes");
      budget.chargeResponse(size, () => callLabel(call));
      if (this.#journal !== undefined && root === "result") {
        if (call.charged !== undefined) call.charged += size;
        const body = encodeBody(value, { events: call.events, bytes: call.charged });
        call.journal = { outcome: "value", body };
      }
      return plain(value);
    }
    const handle = call.handle;
    const specifier = handle.kind === "module" ? handle.module.specifier : handle.specifier;
    const fresh: number[] = [];
    try {
      const outgoing = writeResult(value, table, specifier, call.key, fresh, root, (stream) =>
        this.#wrapStream(stream),
      );
      const journaling = this.#journal !== undefined && root === "result";
      if (journaling) this.#checkReplayable(call, fresh, outgoing);
      const measured = outgoing.streams ? measurable(outgoing.wire) : outgoing.wire;
      const size = dataSize(measured, max, root, RESPONSE_LIMIT, "maxResponseBytes");
      // The body records what the call is charged once its response is (`b`).
      if (journaling) this.#journalValue(call, value, outgoing, (call.charged ?? 0) + size);
      budget.chargeResponse(size, () => callLabel(call));
      if (journaling && call.charged !== undefined) call.charged += size;
      return outgoing.special ? tagged(outgoing.wire) : plain(outgoing.wire);
    } catch (error) {
      // Nothing of a refused response stays registered, and what it returned is not leaked.
      for (const id of fresh) table.forget(id);
      disposeStray(value, (v) => table.holds(v));
      throw error;
    }
  }

  /**
   * In a replay run, checks what a call returned can be replayed: every object it returns must be
   * revivable (`[handle.serialize]` and a kind its module's `[handle.revive]` map has); functions
   * and streams are refused, unless the host function is marked unsafeToRepeat (then its marker
   * stays unsettled, see {@link #journalValue}).
   * @throws BridgeError `bridge/not-replayable` naming what to add or do.
   */
  #checkReplayable(call: CallState, fresh: number[], outgoing: OutgoingValue): void {
    if (call.marker !== undefined) return;
    if (outgoing.streams) {
      throw notReplayable(
        call,
        "a ReadableStream as its result",
        "return an object with a bounded, journaled read() method (e.g. read() → { chunk, done }) instead",
      );
    }
    for (const id of fresh) this.#table.checkReplayable(id);
  }

  /**
   * In a replay run, sets the journal body of a call's answer (`bytes`: what the call is charged
   * in all). A call marked unsafeToRepeat whose value the journal cannot keep leaves its marker
   * unsettled.
   * @throws BridgeError `bridge/not-replayable` when the codec cannot carry the value.
   */
  #journalValue(call: CallState, value: unknown, outgoing: OutgoingValue, bytes: number): void {
    const table = this.#table;
    const unsafe = call.marker !== undefined;
    const methods: Record<string, string[]> = {};
    // Objects are named, and their read-only methods recorded, only in answers that hold them
    // (tagged ones).
    const refs = outgoing.special ? new AnswerRefs(table, call.key) : undefined;
    const readOnly: Record<string, string[]> | undefined = outgoing.special ? {} : undefined;
    let handles = false;
    try {
      const body = encodeBody(value, {
        events: call.events,
        bytes,
        methods,
        handleKind: (h) => {
          const named = table.journalKind(h);
          if (named === null) return "";
          handles = true;
          methods[named.kind] = named.methods;
          if (readOnly !== undefined) readOnly[named.kind] = named.readOnly;
          refs?.see(h);
          return named.kind;
        },
        // Only an answer naming an object already held can have a `k`.
        reused: outgoing.reuses ? refs?.reused : undefined,
        readOnly,
      });
      // `methods`, `readOnly` and `refs.reused` were filled while encoding `r`; the body text
      // holds them (encoded after it).
      refs?.commit();
      call.journal = { outcome: handles ? "handle" : "value", body };
    } catch (error) {
      if (unsafe) {
        call.journal = null;
        return;
      }
      throw new BridgeError(
        "bridge/not-replayable",
        `What ${callLabel(call)} returned cannot be journaled for replay: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  // ── Streams ────────────────────────────────────────────────────────────────

  readonly #streamErrors = new Map<number, ErrorRecord>();
  #nextStream = 1;

  /**
   * A host ReadableStream crosses wrapped: the wrapper pulls one chunk per pull (backpressure
   * kept) and, when the host stream errors, keeps the error's record and closes instead of erroring
   * (an errored RPC stream reaches the isolate as "disconnected prematurely" and logs in the host).
   * The isolate asks {@link streamEnd} once when the stream ends, and errors its own stream with it.
   */
  #wrapStream(source: ReadableStream): unknown {
    const id = this.#nextStream++;
    const reader = source.getReader();
    const wrapped = new ReadableStream(
      {
        pull: async (controller) => {
          try {
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            this.#streamErrors.set(id, safeErrorRecord(error));
            controller.close();
          }
        },
        cancel: (reason) => reader.cancel(reason).catch(() => {}),
      },
      { highWaterMark: 0 },
    );
    return { [TAG]: "r", id, s: wrapped };
  }

  /** How host stream `id` ended: the record of its error, or null when it closed normally. */
  streamEnd(id: unknown): ErrorRecord | null {
    if (typeof id !== "number") return null;
    const record = this.#streamErrors.get(id) ?? null;
    this.#streamErrors.delete(id);
    return record;
  }

  // ── Events ─────────────────────────────────────────────────────────────────

  #emit(
    label: string,
    key: string | undefined,
    outcome: "ok" | "error" | "refused",
    error: unknown,
    startedAt: number,
  ): void {
    let code: unknown;
    try {
      code = (error as { code?: unknown } | undefined)?.code;
    } catch {
      // A hostile thrown value (a Proxy whose traps throw): the event has no code.
    }
    // The executor's emitter reports a throwing listener; the call's answer does not change.
    this.#emitEvent?.({
      type: "bridge:call",
      executionId: this.executionId,
      attempt: this.attempt,
      ...(key === undefined ? {} : { key }),
      label,
      outcome,
      ...(typeof code === "string" ? { code } : {}),
      ms: Date.now() - startedAt,
    });
  }
}
