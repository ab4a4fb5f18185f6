import {
  callIdOf,
  isUnsafeToRepeat,
  type JournalErrorRecord,
  type JournalOutcomeKind,
} from "@durablekit/handle-journal";
import type { BridgeHostFunction } from "../context";
import {
  BridgeError,
  boundErrorRecord,
  fromJournalFailure,
  handledRejection,
  isBridgeError,
  safeErrorRecord,
} from "../errors";
import type { RunInterrupt } from "../run/attempt-outcome";
import { type CallState, callLabel, labelOf } from "../run/call-state";
import type { TargetHandle } from "../run/handle-table";
import {
  type Answer,
  type EventWindow,
  failure,
  HALT,
  journaled,
  type PrefetchedAnswers,
  plain,
  tagged,
} from "../shared/wire";
import { dataSize } from "../values/data-size";
import { type HandleSink, type OutgoingValue, writeResult } from "../values/values";
import { AnswerRefs } from "./answer-refs";
import { type CallJournal, type CallStart, type JournalHost, NOT_REVIVED } from "./call-journal";
import { IsolateAnswers } from "./isolate-answers";
import { checkEvents, digestCallArgs, encodeBody } from "./journal-format";
import { ReplayHandles } from "./replay-handles";
import type { JournalCallName, Recorded, RunJournal } from "./run-journal";

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

/** The refusal of a function, callback or stream in a replay run, saying what to do instead. */
function notReplayable(call: CallState, what: string, instead?: string): BridgeError {
  return new BridgeError(
    "bridge/not-replayable",
    `${callLabel(call)} (call ${call.key}) got ${what}, which a replay run cannot journal: ${instead ?? "pass data or objects instead"}, or mark the host function unsafeToRepeat (then a replay that reaches it fails the run).`,
  );
}

function early(answer: Answer | Promise<Answer>): CallStart {
  return { kind: "answered", answer };
}

/** What the replay knows of one live call of the attempt, beside the call's own state. */
interface JournaledCall {
  /** What the journal records the call as (key, module, method, argument digest). */
  readonly name: JournalCallName;
  /** The isolate's event window sent with the call. */
  readonly events: EventWindow | undefined;
  /**
   * The bytes the call was charged toward `maxTotalBytes` so far (its event window, request, then
   * response or error), recorded with its answer.
   */
  charged: number;
  /** The seq of the unsafeToRepeat marker written before the call ran. */
  marker?: number;
  /** The call released the run (`ctx.interrupt`): its answer is the resume value, never its own. */
  interrupted?: boolean;
  /**
   * The journal body of the call's answer, noted when it is shaped (or refused) and recorded by
   * `settle`; null for a call marked unsafeToRepeat whose value the journal cannot keep.
   */
  answer?: { outcome: JournalOutcomeKind; body: string } | null;
}

/**
 * The replay of one attempt of a replay run (`onInterrupt: "replay"`), behind the run's
 * {@link CallJournal} port: a keyed call is looked up in the journal and answered from it without
 * running; a live one is recorded (refusals included) before its answer is delivered, as a
 * `"journaled"` envelope. It owns what only a replay has: the journal, the journaled handles, the
 * entries sent ahead to the isolate, the count of journaled refusals, and the suspension after
 * `ctx.interrupt()` (held calls, pending interrupts). A port failure ends the attempt: an answer is
 * never delivered unrecorded.
 */
export class ReplayCalls implements CallJournal {
  readonly #journal: RunJournal;
  #host!: JournalHost;
  #handles!: ReplayHandles;
  /** Where answers read from the journal register what they hold. */
  #sink!: HandleSink;
  readonly #calls = new WeakMap<CallState, JournaledCall>();
  /** Set once `ctx.interrupt()` released the run: new calls are held, in-flight ones drain. */
  #suspension: RunInterrupt | undefined;
  /** Calls held while suspending, answered HALT when the attempt ends. */
  readonly #held: Array<(answer: Answer) => void> = [];
  /** Rejects the `ctx.interrupt()` promises when the attempt ends. */
  readonly #interrupts: Array<(error: unknown) => void> = [];
  /** The answers sent ahead to the isolate, and the check of those it reports it used. */
  #answers!: IsolateAnswers;
  /** Calls refused after they got a key (journaled refusals), replayed ones included. */
  #refused = 0;

  /** True when a call the journal does not hold is refused instead of run (a replay of a recording). */
  readonly #refuseLive: boolean;

  /**
   * @param journal - the attempt's journal, loaded once when it starts.
   * @param options - `refuseLive`: a call the journal does not hold ends the run with
   *   `bridge/frontier` instead of running (nothing live is called or recorded).
   */
  constructor(journal: RunJournal, options: { refuseLive?: boolean } = {}) {
    this.#journal = journal;
    this.#refuseLive = options.refuseLive === true;
  }

  attach(host: JournalHost): void {
    if (this.#host !== undefined) throw new Error("A ReplayCalls serves one run.");
    this.#host = host;
    const table = host.table;
    const handles = new ReplayHandles(table, (specifier) => {
      const entry = host.registry.bySpecifier.get(specifier);
      return entry?.kind === "host" ? entry.object : undefined;
    });
    this.#handles = handles;
    this.#sink = {
      addTarget: (target, specifier, creatorKey, fresh) =>
        table.addTarget(target, specifier, creatorKey, fresh),
      addFunction: (fn, specifier, creatorKey, fresh) =>
        table.addFunction(fn, specifier, creatorKey, fresh),
      addJournaled: (journaled, creatorKey, fresh) => handles.add(journaled, creatorKey, fresh),
    };
    this.#answers = new IsolateAnswers(this.#journal, host, this.#sink, {
      nameOf: (call) => this.#journalName(call),
      countRefusal: () => {
        this.#refused++;
      },
    });
  }

  // ── Begin ──────────────────────────────────────────────────────────────────

  /**
   * Before the call is keyed: a released run holds it, the calls the isolate reports it answered
   * take their keys first, and its event window is checked and bounded. Once keyed, it is answered
   * from the journal when recorded there, else run live (its window charged now: it is journaled
   * with whatever answers the call).
   */
  begin(events: unknown, answered: unknown, key: () => CallState): CallStart {
    const host = this.#host;
    if (!host.active) return early(HALT);
    // A released run answers nothing more: the call is neither run nor journaled.
    if (this.#suspension !== undefined) return early(this.#hold());
    if (answered !== undefined) {
      try {
        this.#answers.check(answered);
      } catch (error) {
        return early(this.#failRun(error));
      }
    }
    // What the isolate sends is checked and bounded before anything of it can be stored: its
    // event window, which the journal keeps, is charged to the call as request bytes.
    const checked = checkEvents(events);
    const windowBytes = checked?.bytes ?? 0;
    host.budget.checkWindow(windowBytes, this.#refused);
    const call = key();
    const name = this.#journalName(call);
    let replayed: ReturnType<RunJournal["next"]>;
    try {
      replayed = this.#journal.next(name);
    } catch (error) {
      return early(this.#failRun(error));
    }
    if (replayed.kind !== "live") {
      // Counted as it was when it ran: the limits hold across resumes as in one attempt.
      host.budget.admit(replayed.bytes);
      if (replayed.kind === "interrupt") {
        // Recorded as an interrupt nobody resumed: released again, without running the call.
        this.#suspend(call.key, replayed.payload);
        return early(this.#hold());
      }
      if (replayed.kind === "error") {
        if (replayed.refused) this.#refused++;
        return early(journaled(replayed.seq, replayed.at, failure(replayed.record)));
      }
      try {
        return early(
          journaled(replayed.seq, replayed.at, this.#replayAnswer(call, replayed.value)),
        );
      } catch (error) {
        return early(this.#failRun(error));
      }
    }
    if (this.#refuseLive) {
      return early(
        this.#failRun(
          new BridgeError(
            "bridge/frontier",
            `The replay reached call ${call.key} (${name.module}.${name.method}), which the recording does not hold: the program went on past what was recorded, and a replay of a recording calls nothing live.`,
          ),
        ),
      );
    }
    host.budget.chargeWindow(windowBytes);
    this.#calls.set(call, { name, events: checked?.window, charged: windowBytes });
    return { kind: "live", call };
  }

  /** What the journal records a call as: its key, module (`"<specifier>#<Kind>"` for an object), method and argument digest. */
  #journalName(call: CallState): JournalCallName {
    const handle = call.handle;
    const table = this.#host.table;
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

  /** The answer of a value read from the journal: its handles registered lazily, shaped as a live answer is. */
  #replayAnswer(call: CallState, value: unknown): Answer {
    if ((typeof value !== "object" && typeof value !== "function") || value === null) {
      return plain(value);
    }
    const handle = call.handle;
    const specifier = handle.kind === "module" ? handle.module.specifier : handle.specifier;
    const outgoing = writeResult(value, this.#sink, specifier, call.key, []);
    return outgoing.special ? tagged(outgoing.wire) : plain(outgoing.wire);
  }

  // ── Journaled objects ──────────────────────────────────────────────────────

  /**
   * Every refusal is decided before any host code runs: a journaled object's reviver and the
   * revivers of journaled objects passed as arguments run only for a call that is admitted. So a
   * tagged call's arguments are read dry first, and only then is the object called revived.
   */
  prepare(call: CallState, special: boolean): boolean {
    if (special) this.#host.readDry(call);
    if (call.fn !== NOT_REVIVED) return false;
    const handle = call.handle as TargetHandle;
    const target = this.#handles.revive(handle);
    const fn = (target as Record<string, unknown>)[call.method];
    if (typeof fn !== "function") {
      throw new BridgeError(
        "bridge/unknown-method",
        `${labelOf(handle, call.method)} is not a function of the revived object; its [handle.revive] function must return an object with the methods the original had.`,
      );
    }
    call.fn = fn as BridgeHostFunction;
    call.thisArg = target;
    return true;
  }

  readOnlyUnrevived(call: CallState): boolean {
    return this.#handles.readOnlyUnrevived(call.handle as TargetHandle, call.method);
  }

  revive(handle: TargetHandle): object {
    return this.#handles.revive(handle);
  }

  /**
   * A callback or stream cannot be journaled: refused, unless the function called is marked
   * unsafeToRepeat, or is a journaled object's method not revived yet (whether it is marked is
   * known once it is revived, and its arguments are read again then).
   */
  checkPassable(call: CallState, what: string): void {
    if (call.fn === NOT_REVIVED || isUnsafeToRepeat(call.fn)) return;
    throw notReplayable(call, what);
  }

  // ── Admission ──────────────────────────────────────────────────────────────

  /**
   * Refused after keying: journaled like any answer, so the same call is refused on replay.
   * Refusals are counted, replayed ones too (past maxCalls of them a call is refused unkeyed,
   * unjournaled), and their records bounded, so refused calls cannot grow the journal without
   * bound either.
   */
  refuse(call: CallState, error: unknown): JournalErrorRecord {
    this.#refused++;
    const facts = this.#calls.get(call) as JournaledCall;
    const { record } = boundErrorRecord(
      safeErrorRecord(error),
      REFUSAL_RECORD_BYTES,
      "the bound of a refusal's record",
    );
    const body = encodeBody(record, { events: facts.events, bytes: facts.charged, refused: true });
    facts.answer = { outcome: "error", body };
    return record;
  }

  /** A call marked unsafeToRepeat gets its marker, durable before it runs: a replay that finds it unsettled fails the run. */
  admitted(call: CallState, size: number): Answer | null {
    const facts = this.#calls.get(call) as JournaledCall;
    facts.charged += size;
    if (!isUnsafeToRepeat(call.fn)) return null;
    try {
      const body = encodeBody(null, { events: facts.events });
      facts.marker = this.#journal.record(facts.name, "unsafe", body).seq;
    } catch (error) {
      return this.#failRun(error);
    }
    return null;
  }

  // ── Answers ────────────────────────────────────────────────────────────────

  /**
   * Every object a call returns must be revivable (`[handle.serialize]` and a kind its module's
   * `[handle.revive]` map has); functions and streams are refused, unless the host function is
   * marked unsafeToRepeat (then its marker stays unsettled, see {@link noteAnswer}).
   */
  checkOutgoing(call: CallState, outgoing: OutgoingValue, fresh: readonly number[]): void {
    if (this.#calls.get(call)?.marker !== undefined) return;
    if (outgoing.streams) {
      throw notReplayable(
        call,
        "a ReadableStream as its result",
        "return an object with a bounded, journaled read() method (e.g. read() → { chunk, done }) instead",
      );
    }
    for (const id of fresh) this.#handles.checkReplayable(id);
  }

  /**
   * The journal body of a call's answer, with what the call is charged in all (`b`). A primitive
   * is noted once its response is charged; an answer holding objects before (its objects are named
   * as its body is encoded). A call marked unsafeToRepeat whose value the journal cannot keep
   * leaves its marker unsettled.
   */
  noteAnswer(call: CallState, value: unknown, outgoing: OutgoingValue | null, size: number): void {
    const facts = this.#calls.get(call);
    if (facts === undefined) return;
    if (outgoing === null) {
      facts.charged += size;
      const body = encodeBody(value, { events: facts.events, bytes: facts.charged });
      facts.answer = { outcome: "value", body };
      return;
    }
    const handles = this.#handles;
    const methods: Record<string, string[]> = {};
    // Objects are named, and their read-only methods recorded, only in answers that hold them
    // (tagged ones).
    const refs = outgoing.special ? new AnswerRefs(handles, call.key) : undefined;
    const readOnly: Record<string, string[]> | undefined = outgoing.special ? {} : undefined;
    let holdsHandles = false;
    try {
      const body = encodeBody(value, {
        events: facts.events,
        bytes: facts.charged + size,
        methods,
        handleKind: (h) => {
          const named = handles.journalKind(h);
          if (named === null) return "";
          holdsHandles = true;
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
      facts.answer = { outcome: holdsHandles ? "handle" : "value", body };
    } catch (error) {
      if (facts.marker !== undefined) {
        facts.answer = null;
        return;
      }
      throw new BridgeError(
        "bridge/not-replayable",
        `What ${callLabel(call)} returned cannot be journaled for replay: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** Records the answer noted for the call (or its refusal), then answers it as a `"journaled"` envelope. */
  settle(call: CallState, answer: Answer): Answer {
    const noted = this.#calls.get(call)?.answer;
    if (noted === undefined || noted === null) return answer;
    return this.#record(call, noted.outcome, noted.body, answer);
  }

  /** Records a call's error (not for a call that interrupted the run), then answers it. */
  settleError(call: CallState, record: JournalErrorRecord, bytes: number, answer: Answer): Answer {
    const facts = this.#calls.get(call);
    if (facts === undefined || facts.interrupted) return answer;
    facts.charged += bytes;
    const body = encodeBody(record, { events: facts.events, bytes: facts.charged });
    return this.#record(call, "error", body, answer);
  }

  /**
   * Records a live call's answer (or resolves its unsafeToRepeat marker) and answers it as a
   * `"journaled"` envelope, only once the write returned.
   */
  #record(call: CallState, outcome: JournalOutcomeKind, body: string, answer: Answer): Answer {
    const facts = this.#calls.get(call) as JournaledCall;
    let recorded: Recorded;
    try {
      recorded =
        facts.marker === undefined
          ? this.#journal.record(facts.name, outcome, body)
          : this.#journal.resolve(call.key, facts.marker, outcome, body);
    } catch (error) {
      return this.#failRun(error);
    }
    return journaled(recorded.seq, recorded.at, answer);
  }

  /**
   * The journal (or the replay) failed: the attempt ends failed with that error, a journal's
   * failure named by its bridge code with it as `cause` ({@link fromJournalFailure}); the isolate
   * is halted.
   */
  #failRun(error: unknown): Answer {
    this.#host.stop({ kind: "failed", error: safeErrorRecord(fromJournalFailure(error)) });
    return HALT;
  }

  // ── Interrupts ─────────────────────────────────────────────────────────────

  interrupted(call: CallState): boolean {
    return this.#calls.get(call)?.interrupted === true;
  }

  /**
   * Measures the payload against `maxInterruptBytes` (over it, or not data, the host code's promise
   * rejects and nothing is released), records the interrupt at the call's key, then holds new calls
   * and lets the calls in flight finish and be journaled before the attempt ends as suspended; the
   * promise rejects with `bridge/interrupted` when the attempt ends.
   */
  interrupt(call: CallState, payload: unknown): Promise<never> | null {
    const facts = this.#calls.get(call);
    if (facts === undefined) return null;
    if (call.done || facts.interrupted || !this.#host.active) {
      return handledRejection(
        new BridgeError(
          "bridge/run-ended",
          `ctx.interrupt() of ${callLabel(call)} (call ${call.key}) came after the call ended or the run was already released; interrupt while the call is running, once.`,
        ),
      );
    }
    const max = this.#host.limits.maxInterruptBytes;
    let body: string;
    try {
      // Bounded before anything is written: a payload over the limit releases nothing (the run
      // goes on), and what is admitted is stored split over rows where it outgrows one.
      dataSize(payload, max, "payload", "maxInterruptBytes");
      body = encodeBody(payload, { events: facts.events, bytes: facts.charged });
    } catch (error) {
      if (isBridgeError(error, "bridge/too-large")) {
        return handledRejection(
          new BridgeError(
            "bridge/too-large",
            `The payload of ctx.interrupt() in ${callLabel(call)} encodes to more than ${max} bytes (maxInterruptBytes); the run was not released and goes on. Interrupt with less (e.g. an id of the data), or raise maxInterruptBytes.`,
            { cause: error, limit: "maxInterruptBytes" },
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
      if (facts.marker !== undefined) {
        this.#journal.resolve(call.key, facts.marker, "interrupt", body);
      } else this.#journal.record(facts.name, "interrupt", body);
    } catch (error) {
      this.#failRun(error);
      return handledRejection(fromJournalFailure(error));
    }
    facts.interrupted = true;
    this.#suspend(call.key, payload);
    return new Promise<never>((_resolve, reject) => {
      this.#interrupts.push(reject);
    }).catch((error: unknown) => handledRejection(error));
  }

  get suspension(): RunInterrupt | undefined {
    return this.#suspension;
  }

  finished(): void {
    if (this.#suspension !== undefined) this.#stopWhenDrained();
  }

  /** The run is released at `key`: the first interrupt wins; the attempt ends once no call is in flight. */
  #suspend(key: string, payload: unknown): void {
    if (this.#suspension !== undefined) return;
    this.#suspension = { key, callId: callIdOf(this.#host.executionId, key), payload };
    this.#stopWhenDrained();
  }

  /** Ends a suspending attempt once every call in flight (but the interrupting ones) answered. */
  #stopWhenDrained(): void {
    const suspension = this.#suspension;
    if (suspension === undefined) return;
    for (const call of this.#host.budget.inflight) {
      if (this.#calls.get(call)?.interrupted !== true) return;
    }
    this.#host.stop({ kind: "suspended", interrupt: suspension });
  }

  /** A call that waits for the end of the attempt (a suspending run answers nothing more). */
  #hold(): Promise<Answer> {
    return new Promise((resolve) => this.#held.push(resolve));
  }

  end(): void {
    for (const hold of this.#held.splice(0)) hold(HALT);
    const interrupted = new BridgeError(
      "bridge/interrupted",
      "The run was released by ctx.interrupt(); a resume answers the program with its value, without running this call again.",
    );
    for (const reject of this.#interrupts.splice(0)) reject(interrupted);
  }

  // ── Answered in the isolate (wire v5) ──────────────────────────────────────

  prefetch(): PrefetchedAnswers {
    return this.#answers.prefetch();
  }

  checkAnswered(report: unknown): JournalErrorRecord | undefined {
    if (report === undefined) return undefined;
    try {
      this.#answers.check(report);
      return undefined;
    } catch (error) {
      return safeErrorRecord(fromJournalFailure(error));
    }
  }

  /** A program that ended with journal entries it did not reach diverged: `bridge/diverged`. */
  checkEnded(): JournalErrorRecord | undefined {
    try {
      this.#journal.checkEnded();
      return undefined;
    } catch (error) {
      return safeErrorRecord(fromJournalFailure(error));
    }
  }
}
