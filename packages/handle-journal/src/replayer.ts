import { DivergenceError, JournalError } from "./errors";
import type { JournalEntry } from "./journal-entry";
import type { JournalPort } from "./journal-port";

/** The answer of {@link Replayer.next}. */
export type JournalReplayStep =
  /** The call was recorded: answer it with this entry's outcome instead of running it. */
  | { status: "replayed"; entry: JournalEntry }
  /** The call was never recorded: the replay has reached the frontier, so run it live (and record it). */
  | { status: "caught-up" };

function describe(module: string, method: string, argsDigest: string): string {
  return `${module}.${method}(args ${argsDigest})`;
}

/**
 * Answers a re-run's calls from a loaded journal, by call key. Each call is checked against the
 * recorded one at its key: the same module, method and argument digest, or a
 * {@link DivergenceError}. The first key with no entry is the frontier: from there the run is
 * live. A key that is recorded is answered from the journal even after the frontier (calls that
 * raced may be recorded out of order), so a recorded call never runs twice.
 */
export class Replayer {
  readonly #byKey = new Map<string, JournalEntry>();
  readonly #answered = new Set<string>();
  #frontier: string | undefined;

  /**
   * @param entries a loaded journal, e.g. `store.entries(executionId)`.
   * @throws JournalError `journal/invalid-argument` when `entries` is not an iterable of entries.
   */
  constructor(entries: Iterable<JournalEntry>) {
    if (
      typeof entries !== "object" ||
      entries === null ||
      typeof (entries as Partial<Iterable<JournalEntry>>)[Symbol.iterator] !== "function"
    ) {
      throw new JournalError(
        "journal/invalid-argument",
        "A Replayer takes the loaded entries of one execution, e.g. new Replayer(store.entries(executionId)).",
      );
    }
    for (const entry of entries) {
      if (typeof entry !== "object" || entry === null || typeof entry.key !== "string") {
        throw new JournalError(
          "journal/invalid-argument",
          "Every entry given to a Replayer must be a JournalEntry with a string key.",
        );
      }
      this.#byKey.set(entry.key, entry);
    }
  }

  /** Loads an execution's journal through a port (one read) and returns its replayer. */
  static load(port: JournalPort, executionId: string): Replayer {
    if (typeof port?.lookup !== "function") {
      throw new JournalError(
        "journal/invalid-argument",
        "Replayer.load takes a JournalPort (an object with lookup and record), such as a JournalStore.",
      );
    }
    return new Replayer(port.lookup(executionId));
  }

  /**
   * The recorded outcome of the call at `key`, or `caught-up` when the key was never recorded.
   * @throws DivergenceError (`journal/diverged`) when the recorded call at `key` has a different
   *   module, method or argument digest; JournalError `journal/unsafe-to-repeat` when the
   *   recorded call used a value marked unsafeToRepeat; `journal/conflict` when `key` was
   *   already asked for.
   */
  next(key: string, module: string, method: string, argsDigest: string): JournalReplayStep {
    if (typeof key !== "string") {
      throw new JournalError(
        "journal/invalid-argument",
        `A call key must be a string such as "3" or "3.2"; got ${typeof key}.`,
      );
    }
    if (this.#answered.has(key)) {
      throw new JournalError(
        "journal/conflict",
        `Call ${key} was already replayed; each call key is asked for once. Derive keys with topLevelKey/childKey.`,
      );
    }
    this.#answered.add(key);
    const entry = this.#byKey.get(key);
    if (entry === undefined) {
      this.#frontier ??= key;
      return { status: "caught-up" };
    }
    if (entry.module !== module || entry.method !== method || entry.argsDigest !== argsDigest) {
      throw new DivergenceError(
        key,
        describe(entry.module, entry.method, entry.argsDigest),
        describe(module, method, argsDigest),
      );
    }
    if (entry.outcome === "unsafe") {
      throw new JournalError(
        "journal/unsafe-to-repeat",
        `Replay reached call ${key} (${entry.module}.${entry.method}), which used a value marked unsafeToRepeat; it cannot run again, so the run fails. Start a new execution.`,
      );
    }
    return { status: "replayed", entry };
  }

  /** True once a call was asked for that the journal does not hold. */
  get caughtUp(): boolean {
    return this.#frontier !== undefined;
  }

  /** The first key that was not recorded, once the replay has reached it. */
  get frontierKey(): string | undefined {
    return this.#frontier;
  }

  /** Recorded entries not asked for yet. */
  get remaining(): number {
    let n = 0;
    for (const key of this.#byKey.keys()) if (!this.#answered.has(key)) n++;
    return n;
  }
}
