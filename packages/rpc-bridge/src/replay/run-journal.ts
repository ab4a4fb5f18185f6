import {
  DivergenceError,
  isErrorRecord,
  isJournalError,
  type JournalEntry,
  type JournalErrorRecord,
  type JournalOutcomeKind,
  type JournalPort,
  Replayer,
  toErrorRecord,
} from "@durablekit/handle-journal";
import { BridgeError } from "../errors";
import type { EventWindow } from "../shared/wire";
import { bodyOf, bytesOf, type EntryBody } from "./journal-format";
import { buildSchedule } from "./replay-schedule";

/** Where a journaled call stands when the replay reaches its key. */
export type ReplayedCall =
  /** Not recorded: run it live (and record it). */
  | { kind: "live" }
  /**
   * Recorded with a value (handles as {@link JournaledHandle}s): answer it without running.
   * `bytes` is what the call was charged when it ran (see {@link EntryBody}).
   */
  | { kind: "value"; seq: number; at: number; value: unknown; bytes: number }
  /** Recorded with an error: answer it with this record without running. */
  | {
      kind: "error";
      seq: number;
      at: number;
      record: JournalErrorRecord;
      bytes: number;
      /** The bridge refused the call (see {@link EntryBody} `f`). */
      refused: boolean;
    }
  /** Recorded as an interrupt that was not resumed: the attempt ends interrupted again. */
  | { kind: "interrupt"; payload: unknown; bytes: number };

/**
 * A recorded top-level call whose answer is plain data or an error (no handles, not an interrupt
 * or marker): the isolate may answer it without calling the host (wire v5 `PrefetchedAnswers`).
 */
export type PlainEntry = JournalCallName & {
  seq: number;
  at: number;
  /** The length of the entry's codec text: what sending its answer ahead weighs, about. */
  chars: number;
  /** What the call was charged when it ran (see {@link EntryBody}). */
  bytes: number;
  /** The bridge refused the call after keying it (see {@link EntryBody}). */
  refused: boolean;
} & ({ kind: "value"; value: unknown } | { kind: "error"; record: JournalErrorRecord });

/** What a recorded (or resolved) entry tells the isolate: its order and time. */
export interface Recorded {
  seq: number;
  at: number;
}

/** The journal module name of a call: the module specifier, or `"<specifier>#<Kind>"` for a handle. */
export interface JournalCallName {
  key: string;
  module: string;
  method: string;
  argsDigest: string;
}

/**
 * The journal of one attempt of a replay run, host side: the entries loaded once when the attempt
 * starts, the schedule built from their event windows, and every write of the attempt. Each call
 * that got a key is checked against the entry at its key (same module, method and arguments) and
 * answered from it, or run live and recorded before its answer is delivered. A port failure is
 * thrown to the run, which ends the attempt: an answer is never delivered unrecorded.
 */
export class RunJournal {
  readonly executionId: string;
  /** The recorded event order the isolate re-imposes (`[]` when nothing is recorded). */
  readonly schedule: number[];
  /** Entries loaded when the attempt started. */
  readonly size: number;
  /** The loaded top-level entries with plain answers, in key order (what the isolate may answer). */
  readonly plain: readonly PlainEntry[];
  readonly #port: JournalPort;
  readonly #replayer: Replayer;
  readonly #now: () => number;
  /** The keys of the loaded `handle` entries: the calls whose answers named objects. */
  readonly #namers: ReadonlySet<string>;

  /**
   * Loads the execution's journal through `port` (one read) and builds its schedule.
   * @throws BridgeError `bridge/diverged` when the recorded event windows disagree.
   */
  constructor(
    port: JournalPort,
    executionId: string,
    now: () => number,
    entries?: readonly JournalEntry[],
  ) {
    const loaded = entries ?? port.lookup(executionId);
    this.executionId = executionId;
    this.#port = port;
    this.#now = now;
    this.#replayer = new Replayer(loaded);
    this.size = loaded.length;
    const namers = new Set<string>();
    for (const entry of loaded) if (entry.outcome === "handle") namers.add(entry.key);
    this.#namers = namers;
    const windows: EventWindow[] = [];
    const plain: PlainEntry[] = [];
    for (const entry of loaded) {
      const body = bodyOf(entry, namers);
      const ev = body.ev;
      if (ev !== undefined && ev.length > 0) {
        windows.push({ from: ev[0] as number, list: ev.slice(1) });
      }
      const top = entry.key.indexOf(".") < 0;
      if (top && (entry.outcome === "value" || entry.outcome === "error")) {
        const name = {
          key: entry.key,
          module: entry.module,
          method: entry.method,
          argsDigest: entry.argsDigest,
          seq: entry.seq,
          at: entry.recordedAt,
          chars: entry.payload?.length ?? 0,
          bytes: bytesOf(body),
          refused: body.f === 1,
        };
        const r = body.r;
        plain.push(
          entry.outcome === "error"
            ? { ...name, kind: "error", record: isErrorRecord(r) ? r : toErrorRecord(r) }
            : { ...name, kind: "value", value: r },
        );
      }
    }
    this.schedule = buildSchedule(windows);
    this.plain = plain;
  }

  // ── Replay ─────────────────────────────────────────────────────────────────

  /**
   * The recorded outcome of the call at `call.key`, or `live` when it was never recorded.
   * @throws BridgeError `bridge/diverged` when another call is recorded at the key;
   *   `bridge/unsafe-to-repeat` when the recorded call is an unsettled unsafeToRepeat marker.
   */
  next(call: JournalCallName): ReplayedCall {
    const entry = this.match(call);
    if (entry === null) return { kind: "live" };
    const body = bodyOf(entry, this.#namers);
    const bytes = bytesOf(body);
    switch (entry.outcome) {
      case "interrupt":
        return { kind: "interrupt", payload: body.r, bytes };
      case "error": {
        const r = body.r;
        const record = isErrorRecord(r) ? r : toErrorRecord(r);
        const refused = body.f === 1;
        return { kind: "error", seq: entry.seq, at: entry.recordedAt, record, bytes, refused };
      }
      default:
        return { kind: "value", seq: entry.seq, at: entry.recordedAt, value: body.r, bytes };
    }
  }

  /**
   * The entry recorded at `call.key`, not decoded (what checking a call the isolate answered
   * itself needs), or null when nothing is recorded there: the replay moves past it as
   * {@link next} does.
   * @throws as {@link next}.
   */
  match(call: JournalCallName): JournalEntry | null {
    let step: ReturnType<Replayer["next"]>;
    try {
      step = this.#replayer.next(call.key, call.module, call.method, call.argsDigest);
    } catch (error) {
      if (error instanceof DivergenceError) {
        throw new BridgeError(
          "bridge/diverged",
          `The replay diverged at call ${error.key}: the journal recorded ${error.expected}, the program now made ${error.actual}. The program, its input or what its calls returned changed since the run was recorded; start a new execution.`,
          { cause: error },
        );
      }
      if (isJournalError(error, "journal/unsafe-to-repeat")) {
        throw new BridgeError(
          "bridge/unsafe-to-repeat",
          `The replay reached call ${call.key} (${call.module}.${call.method}), which is marked unsafeToRepeat and started without its outcome being recorded; it is not run twice, so the run fails. Start a new execution.`,
          { cause: error },
        );
      }
      throw error;
    }
    return step.status === "caught-up" ? null : step.entry;
  }

  /**
   * When the program ended: a journal with entries the replay never reached is a divergence.
   * @throws BridgeError `bridge/diverged` naming the first key left.
   */
  checkEnded(): void {
    const left = this.#replayer.remaining;
    if (left === 0) return;
    throw new BridgeError(
      "bridge/diverged",
      `The replay diverged: the program ended with ${left} recorded call(s) it did not make again (the journal holds calls past where the program now stops). Start a new execution.`,
    );
  }

  // ── Recording ──────────────────────────────────────────────────────────────

  /**
   * Records a call's outcome (one port write) before its answer is delivered.
   * @throws the port's error (the run ends; the answer is not delivered).
   */
  record(call: JournalCallName, outcome: JournalOutcomeKind, body: string): Recorded {
    const at = this.#now();
    const { seq } = this.#port.record({
      executionId: this.executionId,
      key: call.key,
      module: call.module,
      method: call.method,
      argsDigest: call.argsDigest,
      outcome,
      payload: body,
      recordedAt: at,
    });
    return { seq, at };
  }

  /**
   * Resolves an `unsafe` marker to its call's outcome (one port write).
   * @throws BridgeError `bridge/conflict` when the marker is no longer pending.
   */
  resolve(key: string, seq: number, outcome: JournalOutcomeKind, body: string): Recorded {
    const at = this.#now();
    if (!this.#port.resolve(this.executionId, key, outcome, body, at)) {
      throw new BridgeError(
        "bridge/conflict",
        `Call ${key} of execution ${this.executionId} is no longer pending in the journal; another attempt settled it.`,
      );
    }
    return { seq, at };
  }
}
