import { BridgeError } from "../errors";
import { type CallState, callLabel } from "../run/call-state";
import {
  type Answer,
  type AnsweredCalls,
  failure,
  type PrefetchedAnswers,
  plain,
  tagged,
} from "../shared/wire";
import { type HandleSink, writeResult } from "../values/values";
import type { JournalHost } from "./call-journal";
import type { JournalCallName, PlainEntry, RunJournal } from "./run-journal";

/**
 * At most this much journal text (UTF-16 code units) of answers is sent ahead with an attempt. Its
 * answers cross in the one `evaluate` message, which Workers RPC caps at 32 MiB, and the isolate
 * holds them while it runs; a journal that grew past it over many resumes replays the rest through
 * the host.
 */
export const PREFETCH_MAX_CHARS = 4 * 1024 * 1024;

/** A journal entry sent ahead: the module handle and function it was recorded for, and what it counts. */
interface SentAnswer {
  id: number;
  method: string;
  bytes: number;
  refused: boolean;
}

/** What {@link IsolateAnswers} needs of the replay it serves. */
export interface IsolateAnswersOwner {
  /** What the journal records a call as. */
  nameOf(call: CallState): JournalCallName;
  /** Counts a reported call that was a journaled refusal toward the run's refusals. */
  countRefusal(): void;
}

/**
 * The journal answers a replay attempt sends its isolate ahead (wire v5), so that top-level calls
 * recorded with plain answers are answered there without a round trip, and the check of the calls
 * the isolate reports it answered with them: each is checked exactly as if it had come to the
 * host. Invariant: the isolate can report as answered only an entry it was sent, once.
 */
export class IsolateAnswers {
  readonly #journal: RunJournal;
  readonly #host: JournalHost;
  readonly #sink: HandleSink;
  readonly #owner: IsolateAnswersOwner;
  /** The entries sent to the isolate to answer itself, not yet reported answered, by seq. */
  readonly #sent = new Map<number, SentAnswer>();

  constructor(
    journal: RunJournal,
    host: JournalHost,
    sink: HandleSink,
    owner: IsolateAnswersOwner,
  ) {
    this.#journal = journal;
    this.#host = host;
    this.#sink = sink;
    this.#owner = owner;
  }

  /**
   * The journal's plain answers of top-level calls, for the isolate to answer those calls itself
   * (`ReplayOptions.answers`). Entries whose value would register a handle, whose module is not
   * configured now, or past {@link PREFETCH_MAX_CHARS} of journal text, are left to the host.
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
    const registry = this.#host.registry;
    let budget = PREFETCH_MAX_CHARS;
    for (const entry of this.#journal.plain) {
      // Over the budget, an answer stays on the host, which answers its call as before.
      if (entry.chars > budget) continue;
      const module = registry.bySpecifier.get(entry.module);
      if (module?.kind !== "host") continue;
      const answer =
        entry.kind === "error" ? failure(entry.record) : this.#plainAnswer(entry, entry.value);
      if (answer === null) continue;
      budget -= entry.chars;
      this.#sent.set(entry.seq, {
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
      const outgoing = writeResult(value, this.#sink, entry.module, entry.key, fresh);
      if (fresh.length === 0)
        return outgoing.special ? tagged(outgoing.wire) : plain(outgoing.wire);
    } catch {
      // Left to the host, which answers it as before.
    }
    for (const id of fresh) this.#host.table.forget(id);
    return null;
  }

  /**
   * The calls the isolate reports it answered itself (in an `invoke` or the attempt's outcome),
   * checked exactly as if each had come to the host: in order, each is keyed, its arguments
   * digested here and compared with the journal entry at its key, and counted; the entry must be
   * the one the isolate used.
   * @throws BridgeError `bridge/diverged` (or `bridge/unsafe-to-repeat`) at the first call
   *   that is not the journal's entry the isolate answered it with; `bridge/invalid-argument` for
   *   a malformed report.
   */
  check(report: unknown): void {
    const host = this.#host;
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
      const sent = typeof seq === "number" ? this.#sent.get(seq) : undefined;
      if (sent === undefined || !Array.isArray(args)) {
        throw new BridgeError(
          "bridge/diverged",
          `The isolate reported a call it answered with journal entry ${String(seq)}, which the host did not send it (or without its arguments); the attempt is not trusted. Start a new execution.`,
        );
      }
      const now = Date.now();
      // The call the isolate answered with an entry is a call of that entry's module function.
      const call = host.resolve(sent.id, sent.method, args, now, now);
      const entry = this.#journal.match(this.#owner.nameOf(call));
      if ((entry?.outcome !== "value" && entry?.outcome !== "error") || entry.seq !== seq) {
        throw new BridgeError(
          "bridge/diverged",
          `The replay diverged at call ${call.key} (${callLabel(call)}): the isolate answered it with journal entry ${seq}, which is not the entry recorded at that key. Start a new execution.`,
        );
      }
      this.#sent.delete(seq as number);
      host.budget.admit(sent.bytes);
      if (sent.refused) this.#owner.countRefusal();
    }
  }
}
