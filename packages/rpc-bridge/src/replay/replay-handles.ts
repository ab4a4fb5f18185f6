import {
  createReviver,
  type HandleRecord,
  handleKindOf,
  isHandle,
  isJournalError,
} from "@durablekit/handle-journal";
import { BridgeError } from "../errors";
import { isReadOnly } from "../modules/read-only";
import { disposeQuietly, type HandleTable, type TargetHandle } from "../run/handle-table";
import type { TargetDescriptor } from "../shared/wire";
import { creatorOfRef, type JournaledHandle } from "./journal-format";

/**
 * The replay's side of a run's handle table: journaled objects registered before they exist and
 * revived at their first live call, the names (`"<key>#<n>"`, see `handleRef`) under which the
 * journal knows the objects answers returned, and the checks that what a call returns can be
 * journaled. Per handle, what only a replay knows lives here, not on the table's entries.
 */
export class ReplayHandles {
  readonly #table: HandleTable;
  readonly #moduleOf: (specifier: string) => object | undefined;
  /** Held target handles by their journal name (a name of a handle the table no longer holds is free). */
  readonly #byRef = new Map<string, TargetHandle>();
  /** The journal name of each named handle. */
  readonly #refs = new WeakMap<TargetHandle, string>();
  /** The handle record a journaled handle was registered from, until it is revived. */
  readonly #records = new WeakMap<TargetHandle, HandleRecord>();
  /**
   * A journaled handle's methods marked read-only when the live run returned the object (what a
   * `"read"` run decides access by before reviving it); absent when not recorded.
   */
  readonly #readOnly = new WeakMap<TargetHandle, ReadonlySet<string>>();

  /**
   * @param moduleOf - the object of the host module configured now under a specifier (what
   *   revives its handles: a redeployed module revives what an earlier version made).
   */
  constructor(table: HandleTable, moduleOf: (specifier: string) => object | undefined) {
    this.#table = table;
    this.#moduleOf = moduleOf;
  }

  /**
   * Registers a handle a replay read from the journal: the program gets the usual descriptor with
   * the recorded method names, and no target exists until {@link revive}. A handle whose name the
   * table already holds (the live run returned that object before, or a concurrent call the replay
   * answered first did) is that object again, as it was live.
   */
  add(journaled: JournaledHandle, creatorKey: string, fresh: number[]): TargetDescriptor {
    const { record, methods, ref, reuses, readOnly } = journaled;
    const held = this.#held(ref);
    // Never another kind than the record's (a journal edited by hand): then a new, unnamed object.
    if (held !== undefined && held.label === record.$handle) return held.descriptor;
    // A name given by a call the replay has not answered yet (concurrent calls can be answered in
    // another order than live): the object is registered now, under the key of that call. Its
    // module is its record's, not always the module of the call answered now (another module's
    // call may return it, and a replay may answer that call first).
    const owner = held === undefined ? (reuses ? creatorOfRef(ref) : creatorKey) : null;
    const entry = this.#table.addPending(record.$handle, methods, owner ?? creatorKey, fresh);
    this.#records.set(entry, record);
    if (readOnly !== null) this.#readOnly.set(entry, new Set(readOnly));
    if (owner !== null) this.#name(entry, ref);
    return entry.descriptor;
  }

  /** The journal name of a held object, if an answer that returned it was journaled. */
  refOf(value: object): string | undefined {
    const entry = this.#table.handleOf(value);
    return entry?.kind === "target" ? this.#refs.get(entry) : undefined;
  }

  /** Names a held object in the journal (once: its first journaled answer names it). */
  nameRef(value: object, ref: string): void {
    const entry = this.#table.handleOf(value);
    if (entry?.kind === "target") this.#name(entry, ref);
  }

  /** The handle held under journal name `ref`: one the table disposed of holds it no more. */
  #held(ref: string): TargetHandle | undefined {
    const entry = this.#byRef.get(ref);
    return entry !== undefined && this.#table.get(entry.id) === entry ? entry : undefined;
  }

  #name(entry: TargetHandle, ref: string): void {
    if (this.#refs.has(entry) || this.#held(ref) !== undefined) return;
    this.#refs.set(entry, ref);
    this.#byRef.set(ref, entry);
  }

  /**
   * Whether a `"read"` run may call `method` of a journaled object not revived yet, by the
   * read-only marks recorded with it (true when none were: decided once it is revived).
   */
  readOnlyUnrevived(entry: TargetHandle, method: string): boolean {
    const marks = this.#readOnly.get(entry);
    return marks === undefined || marks.has(method);
  }

  /**
   * The live object of a target handle, reviving a journaled one through its module's
   * `[handle.revive]` map (the module as configured now).
   * @throws BridgeError `bridge/not-replayable` when the module configured now has no reviver for
   *   the kind (its `cause` handle-journal's `journal/no-reviver`), or its reviver returned a
   *   promise or no object; what the reviver throws.
   */
  revive(entry: TargetHandle): object {
    if (entry.target !== null) return entry.target;
    const record = this.#records.get(entry) as HandleRecord;
    const revive = createReviver({ [entry.specifier]: this.#moduleOf(entry.specifier) });
    let target: unknown;
    try {
      target = revive(record);
    } catch (error) {
      if (!isJournalError(error, "journal/no-reviver")) throw error;
      throw new BridgeError(
        "bridge/not-replayable",
        `${record.$handle} cannot be revived by the module deployed now, so it cannot be called again: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (typeof (target as PromiseLike<unknown> | null)?.then === "function") {
      // What it resolves to is never handed out: disposed once it exists, so nothing leaks.
      (target as PromiseLike<unknown>).then(disposeQuietly, () => {});
      throw new BridgeError(
        "bridge/not-replayable",
        `The reviver of ${record.$handle} returned a promise; a [handle.revive] function must return the object synchronously (make [handle.revive].${entry.handleKind} return the object at once and do asynchronous work in its methods).`,
      );
    }
    if (typeof target !== "object" || target === null) {
      throw new BridgeError(
        "bridge/not-replayable",
        `The reviver of ${record.$handle} returned ${target === null ? "null" : typeof target}, not an object; make [handle.revive].${entry.handleKind} return the object.`,
      );
    }
    this.#records.delete(entry);
    this.#table.attach(entry, target);
    return target;
  }

  /**
   * Refuses an object a call is returning that could not be revived after a restart: it must
   * implement `[handle.serialize]()` and declare a kind its module's `[handle.revive]` map has.
   * @throws BridgeError `bridge/not-replayable` naming what to add.
   */
  checkReplayable(id: number): void {
    const entry = this.#table.get(id);
    if (entry?.kind === "function") {
      throw new BridgeError(
        "bridge/not-replayable",
        `${entry.label} returned a function, which a replay run cannot journal; return an object with [handle.serialize] instead, or mark the host function unsafeToRepeat (a replay that reaches it then fails).`,
      );
    }
    if (entry?.kind !== "target" || entry.target === null) return;
    if (!isHandle(entry.target)) {
      throw new BridgeError(
        "bridge/not-replayable",
        `${entry.label} has no [handle.serialize]() method, so a replay could not revive it: add [handle.serialize]() returning its own JSON (e.g. { id }).`,
      );
    }
    const declared = handleKindOf(entry.target);
    if (entry.handleKind === null) {
      const known = [...this.#table.revivableKinds(entry.specifier)];
      throw new BridgeError(
        "bridge/not-replayable",
        declared === null
          ? `${entry.label} declares no kind, so a replay could not revive it: add static [handle.kind] = "<Kind>" to its class and <Kind> to the [handle.revive] map of module "${entry.specifier}".`
          : `${entry.label} has kind "${declared}", which module "${entry.specifier}" cannot revive (its [handle.revive] map has: ${known.join(", ") || "nothing"}); add ${declared} to it.`,
      );
    }
  }

  /**
   * The journal name, method names and read-only method names of a held object with a
   * revivable kind, or `null`: what a replay run's journal records a returned handle as.
   */
  journalKind(value: object): { kind: string; methods: string[]; readOnly: string[] } | null {
    const entry = this.#table.handleOf(value);
    if (entry?.kind !== "target" || entry.handleKind === null) return null;
    const methods = entry.descriptor.m;
    const target = entry.target as Record<string, unknown>;
    return {
      kind: `${entry.specifier}#${entry.handleKind}`,
      methods,
      readOnly: methods.filter((name) => isReadOnly(target[name])),
    };
  }
}
