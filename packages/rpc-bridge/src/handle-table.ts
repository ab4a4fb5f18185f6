import { RpcTarget } from "cloudflare:workers";
import {
  createReviver,
  type HandleRecord,
  handleKindOf,
  handle as handleSymbols,
  isHandle,
  isJournalError,
} from "@durablekit/handle-journal";
import { MAX_DEPTH } from "./data-size";
import { BridgeError } from "./errors";
import type { HostModuleEntry } from "./module-registry";
import { isReadOnly } from "./read-only";
import { creatorOfRef, type JournaledHandle } from "./run-journal";
import { type FunctionDescriptor, TAG, type TargetDescriptor } from "./wire";

/** A host module's exports, as a handle (ids 1..n in every run; never disposed). */
export interface ModuleHandle {
  kind: "module";
  id: number;
  module: HostModuleEntry;
}

/** An RpcTarget a call returned (or, in a replay, its journaled record, revived at first live use). */
export interface TargetHandle {
  kind: "target";
  id: number;
  /** The object; `null` while a journaled handle is not revived (its calls are answered from the journal). */
  target: object | null;
  /** The handle record a replay registered it from, until it is revived. */
  record?: HandleRecord;
  /**
   * A journaled handle's methods marked read-only when the live run returned the object (what a
   * `"read"` run decides access by before reviving it); absent when not recorded.
   */
  readOnly?: ReadonlySet<string>;
  /**
   * Its revivable kind: the `[handle.kind]` its class declares, when that is a key of the creating
   * module's `[handle.revive]` map; `null` otherwise. Never the constructor's name (minification
   * changes it).
   */
  handleKind: string | null;
  /**
   * `"<specifier>#<Kind>"`, e.g. `"codemode:jobs#Run"`, for messages, events and the program's
   * `Symbol.toStringTag`: the declared kind, or else the class name (display only, never a kind).
   */
  label: string;
  /** The module whose call returned it. */
  specifier: string;
  methods: ReadonlySet<string>;
  /** The key of the call that returned it: its method calls are keyed `<creatorKey>.<n>`. */
  creatorKey: string;
  descriptor: TargetDescriptor;
  /**
   * Its name in a replay run's journal (`"<key>#<n>"`, see `handleRef`), once an answer that
   * returned it was journaled: an answer returning it again records this name, so the replay hands
   * the program the same object (with the same `creatorKey`) as the live run did.
   */
  ref?: string;
}

/** A function a call returned. */
export interface FunctionHandle {
  kind: "function";
  id: number;
  fn: (...args: never[]) => unknown;
  label: string;
  specifier: string;
  creatorKey: string;
  descriptor: FunctionDescriptor;
}

/** One entry of a run's handle table. */
export type Handle = ModuleHandle | TargetHandle | FunctionHandle;

/** Names that never become callable methods of a returned object. */
const HIDDEN_METHODS = new Set(["constructor", "then", "toJSON", "__proto__"]);
/** Per prototype: its method names (the descriptor's list) and the same as a set (for lookups). */
const methodCache = new WeakMap<object, { names: string[]; set: ReadonlySet<string> }>();

function methodsOfPrototype(proto: object): { names: string[]; set: ReadonlySet<string> } {
  const cached = methodCache.get(proto);
  if (cached) return cached;
  const names: string[] = [];
  for (
    let p: object | null = proto;
    p !== null && p !== RpcTarget.prototype && p !== Object.prototype;
    p = Object.getPrototypeOf(p) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(p)) {
      if (HIDDEN_METHODS.has(name) || names.includes(name)) continue;
      const descriptor = Object.getOwnPropertyDescriptor(p, name);
      if (typeof descriptor?.value === "function") names.push(name);
    }
  }
  const entry = { names, set: new Set(names) };
  methodCache.set(proto, entry);
  return entry;
}

/** The callable methods of an RpcTarget: functions on its prototype chain below RpcTarget. */
export function methodsOf(target: object): string[] {
  const proto = Object.getPrototypeOf(target) as object | null;
  return proto === null ? [] : methodsOfPrototype(proto).names;
}

/** The kinds a host module can revive: the own keys of its `[handle.revive]` map. */
function reviveKinds(module: object): ReadonlySet<string> {
  try {
    const map = (module as { [handleSymbols.revive]?: unknown })[handleSymbols.revive];
    return typeof map === "object" && map !== null ? new Set(Object.keys(map)) : new Set();
  } catch {
    return new Set();
  }
}

/** A class name for messages only (a minifier may have changed it); never used as a kind. */
function displayName(target: object): string {
  return (target.constructor as { name?: string } | undefined)?.name || "Object";
}

/** Calls `value[Symbol.dispose]()` if it has one, swallowing what it throws or rejects with. */
export function disposeQuietly(value: unknown): void {
  try {
    const dispose = (value as { [Symbol.dispose]?: () => unknown } | null)?.[Symbol.dispose];
    if (typeof dispose === "function") {
      const out = dispose.call(value);
      if (out instanceof Promise) out.catch(() => {});
    }
  } catch {
    // A target's own dispose failing must not stop the others from being released.
  }
}

/**
 * The objects and functions one run holds. Host modules are handles 1..n; every RpcTarget or
 * function a call returns is registered once (returning it again reuses its id) until the program
 * disposes it or the run ends, when {@link disposeAll} releases whatever is left.
 */
export class HandleTable {
  readonly #entries = new Map<number, Handle>();
  /** Per host module specifier: the keys of its `[handle.revive]` map (empty when it has none). */
  readonly #revivable = new Map<string, ReadonlySet<string>>();
  readonly #byValue = new Map<object, TargetHandle | FunctionHandle>();
  /** Held target handles by their journal name (see {@link TargetHandle.ref}). */
  readonly #byRef = new Map<string, TargetHandle>();
  /** Objects more than one handle reaches (see {@link liveTarget}): every handle that does. */
  readonly #sharers = new Map<object, Set<TargetHandle>>();
  readonly #maxHandles: number;
  /**
   * Journaled handles held and not revived yet (they have no object in `#byValue`): held all the
   * same, so `maxHandles` counts them as the live run counted their objects.
   */
  #unrevived = 0;
  #next: number;

  constructor(hosts: readonly HostModuleEntry[], maxHandles: number) {
    for (const module of hosts) {
      this.#entries.set(module.handleId, { kind: "module", id: module.handleId, module });
      this.#revivable.set(module.specifier, reviveKinds(module.object));
    }
    this.#next = hosts.length + 1;
    this.#maxHandles = maxHandles;
  }

  /** The live handle with this id, or undefined when unknown or disposed. */
  get(id: number): Handle | undefined {
    return this.#entries.get(id);
  }

  /** How many returned objects and functions are held now (journaled ones not revived included). */
  get held(): number {
    return this.#byValue.size + this.#unrevived;
  }

  /** Registers an RpcTarget returned by call `creatorKey` of module `specifier`; a new id is pushed to `fresh`. */
  addTarget(
    target: object,
    specifier: string,
    creatorKey: string,
    fresh: number[],
  ): TargetDescriptor {
    const known = this.#byValue.get(target);
    if (known?.kind === "target") return known.descriptor;
    const id = this.#reserve();
    // Only RpcTargets are registered, so the prototype chain is never empty.
    const methods = methodsOfPrototype(Object.getPrototypeOf(target) as object);
    const declared = handleKindOf(target);
    const handleKind =
      declared !== null && this.#revivable.get(specifier)?.has(declared) ? declared : null;
    const label = `${specifier}#${declared ?? displayName(target)}`;
    const descriptor: TargetDescriptor = { [TAG]: "t", id, k: label, m: methods.names };
    const entry: TargetHandle = {
      kind: "target",
      id,
      target,
      handleKind,
      label,
      specifier,
      methods: methods.set,
      creatorKey,
      descriptor,
    };
    this.#register(entry, target, fresh);
    return descriptor;
  }

  /**
   * Registers a handle a replay read from the journal: the program gets the usual descriptor with
   * the recorded method names, and no target exists until {@link liveTarget}. A handle whose name
   * the table already holds (the live run returned that object before, or a concurrent call the
   * replay answered first did) is that object again, as it was live.
   */
  addJournaled(journaled: JournaledHandle, creatorKey: string, fresh: number[]): TargetDescriptor {
    const { record, methods, ref, reuses, readOnly } = journaled;
    const held = this.#byRef.get(ref);
    // Never another kind than the record's (a journal edited by hand): then a new, unnamed object.
    if (held !== undefined && held.label === record.$handle) return held.descriptor;
    // A name given by a call the replay has not answered yet (concurrent calls can be answered in
    // another order than live): the object is registered now, under the key of that call.
    const owner = held === undefined ? (reuses ? creatorOfRef(ref) : creatorKey) : null;
    // Counted, never refused: the answer holding it is the journal's, admitted when it was recorded.
    const id = this.#next++;
    this.#unrevived++;
    const label = record.$handle;
    const at = label.lastIndexOf("#");
    // The module that made it, from its record: not always the module of the call answered now
    // (another module's call may return it, and a replay may answer that call first).
    const specifier = label.slice(0, at);
    const kind = label.slice(at + 1);
    const descriptor: TargetDescriptor = { [TAG]: "t", id, k: label, m: [...methods] };
    const entry: TargetHandle = {
      kind: "target",
      id,
      target: null,
      record,
      handleKind: kind,
      label,
      specifier,
      methods: new Set(methods),
      ...(readOnly === null ? {} : { readOnly: new Set(readOnly) }),
      creatorKey: owner ?? creatorKey,
      descriptor,
    };
    this.#entries.set(id, entry);
    if (owner !== null) this.#name(entry, ref);
    fresh.push(id);
    return descriptor;
  }

  /** The journal name of a held object, if an answer that returned it was journaled. */
  refOf(value: object): string | undefined {
    const entry = this.#byValue.get(value);
    return entry?.kind === "target" ? entry.ref : undefined;
  }

  /** Names a held object in the journal (once: its first journaled answer names it). */
  nameRef(value: object, ref: string): void {
    const entry = this.#byValue.get(value);
    if (entry?.kind === "target") this.#name(entry, ref);
  }

  #name(entry: TargetHandle, ref: string): void {
    if (entry.ref !== undefined || this.#byRef.has(ref)) return;
    entry.ref = ref;
    this.#byRef.set(ref, entry);
  }

  /**
   * The live object of a target handle, reviving a journaled one through its module's
   * `[handle.revive]` map (the module as configured now: a redeployed module revives what an
   * earlier version made).
   * @throws BridgeError `bridge/not-replayable` when the module configured now has no reviver for
   *   the kind (its `cause` handle-journal's `journal/no-reviver`), or its reviver returned a
   *   promise or no object; what the reviver throws.
   */
  liveTarget(entry: TargetHandle, moduleOf: (specifier: string) => object | undefined): object {
    if (entry.target !== null) return entry.target;
    const record = entry.record as HandleRecord;
    const revive = createReviver({ [entry.specifier]: moduleOf(entry.specifier) });
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
    entry.target = target;
    delete entry.record;
    this.#unrevived--;
    const holder = this.#byValue.get(target);
    if (holder === undefined) {
      this.#byValue.set(target, entry);
    } else {
      // The reviver gave back an object another handle holds (the host keeps one object per id,
      // and a live call returned it before this handle was revived): both handles reach it, and
      // it is released once, when the last of them goes.
      const sharers = this.#sharers.get(target) ?? new Set([holder as TargetHandle]);
      sharers.add(entry);
      this.#sharers.set(target, sharers);
    }
    return target;
  }

  /**
   * In a replay run, refuses an object a call is returning that could not be revived after a
   * restart: it must implement `[handle.serialize]()` and declare a kind its module's
   * `[handle.revive]` map has.
   * @throws BridgeError `bridge/not-replayable` naming what to add.
   */
  checkReplayable(id: number): void {
    const entry = this.#entries.get(id);
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
      const known = [...(this.#revivable.get(entry.specifier) ?? [])];
      throw new BridgeError(
        "bridge/not-replayable",
        declared === null
          ? `${entry.label} declares no kind, so a replay could not revive it: add static [handle.kind] = "<Kind>" to its class and <Kind> to the [handle.revive] map of module "${entry.specifier}".`
          : `${entry.label} has kind "${declared}", which module "${entry.specifier}" cannot revive (its [handle.revive] map has: ${known.join(", ") || "nothing"}); add ${declared} to it.`,
      );
    }
  }

  /** The target handle with this id, when the table holds one. */
  target(id: number): TargetHandle | undefined {
    const entry = this.#entries.get(id);
    return entry?.kind === "target" ? entry : undefined;
  }

  /** Registers a function returned by call `creatorKey` of module `specifier`; a new id is pushed to `fresh`. */
  addFunction(
    fn: (...args: never[]) => unknown,
    specifier: string,
    creatorKey: string,
    fresh: number[],
  ): FunctionDescriptor {
    const known = this.#byValue.get(fn);
    if (known?.kind === "function") return known.descriptor;
    const id = this.#reserve();
    const descriptor: FunctionDescriptor = { [TAG]: "f", id };
    const label = `${specifier}#${fn.name || "function"}`;
    const entry: FunctionHandle = {
      kind: "function",
      id,
      fn,
      label,
      specifier,
      creatorKey,
      descriptor,
    };
    this.#register(entry, fn, fresh);
    return descriptor;
  }

  /** The next id, once the table has room for one more object. */
  #reserve(): number {
    if (this.held >= this.#maxHandles) {
      throw new BridgeError(
        "bridge/limit-handles",
        `The run already holds ${this.#maxHandles} objects (maxHandles); dispose objects it no longer needs (using / [Symbol.dispose]).`,
      );
    }
    return this.#next++;
  }

  #register(entry: TargetHandle | FunctionHandle, value: object, fresh: number[]): void {
    this.#entries.set(entry.id, entry);
    this.#byValue.set(value, entry);
    fresh.push(entry.id);
  }

  /**
   * The `"<specifier>#<Kind>"` of a held object with a revivable kind, or `null` (not held, a
   * function, or no kind its creating module can revive). The bridge, which knows the creating
   * module, names handle records with it: it is `encode`'s `handleKind`, while the object's own
   * `[handle.serialize]()` gives only its JSON.
   */
  recordKind(value: object): string | null {
    const entry = this.#byValue.get(value);
    if (entry?.kind !== "target" || entry.handleKind === null) return null;
    return `${entry.specifier}#${entry.handleKind}`;
  }

  /**
   * The journal name, method names and read-only method names of a held object with a
   * revivable kind, or `null`: what a replay run's journal records a returned handle as.
   */
  journalKind(value: object): { kind: string; methods: string[]; readOnly: string[] } | null {
    const entry = this.#byValue.get(value);
    if (entry?.kind !== "target" || entry.handleKind === null) return null;
    const methods = entry.descriptor.m;
    const target = entry.target as Record<string, unknown>;
    return {
      kind: `${entry.specifier}#${entry.handleKind}`,
      methods,
      readOnly: methods.filter((name) => isReadOnly(target[name])),
    };
  }

  /** True when the object or function is held by the table. */
  holds(value: object): boolean {
    return this.#byValue.has(value);
  }

  /**
   * Releases one returned object or function: removes it and calls its `[Symbol.dispose]`, if any.
   * Returns false for module handles, ids already released, and objects another handle still
   * reaches (see {@link forget}).
   */
  dispose(id: number): boolean {
    const value = this.forget(id);
    if (value === undefined) return false;
    disposeQuietly(value);
    return true;
  }

  /**
   * Removes an entry without disposing it; returns its object or function (`undefined` for a
   * journaled handle never revived, or an object another handle still reaches: there is nothing
   * to release).
   */
  forget(id: number): object | undefined {
    const entry = this.#entries.get(id);
    if (!entry || entry.kind === "module") return undefined;
    this.#entries.delete(id);
    if (entry.kind === "target" && entry.ref !== undefined) this.#byRef.delete(entry.ref);
    const value = entry.kind === "target" ? entry.target : entry.fn;
    if (value === null) {
      this.#unrevived--;
      return undefined;
    }
    const sharers = this.#sharers.get(value);
    if (sharers !== undefined && entry.kind === "target") {
      // Another handle still reaches the object: it stays, held by that handle.
      sharers.delete(entry);
      const [next] = sharers;
      if (sharers.size === 1) this.#sharers.delete(value);
      if (this.#byValue.get(value) === entry) this.#byValue.set(value, next as TargetHandle);
      return undefined;
    }
    this.#byValue.delete(value);
    return value;
  }

  /** Releases every returned object and function still held; returns how many. */
  disposeAll(): number {
    let count = 0;
    for (const id of [...this.#entries.keys()]) {
      if (this.dispose(id)) count++;
    }
    return count;
  }
}

/**
 * Disposes the RpcTargets inside a value that never reached the program (a late or refused
 * result), except those `held` says the program still holds from earlier calls.
 */
export function disposeStray(value: unknown, held: (value: object) => boolean, depth = 0): void {
  if (typeof value !== "object" || value === null || depth > MAX_DEPTH) return;
  if (value instanceof RpcTarget) {
    if (!held(value)) disposeQuietly(value);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) disposeStray(item, held, depth + 1);
  } else if (Object.getPrototypeOf(value) === Object.prototype) {
    for (const item of Object.values(value)) disposeStray(item, held, depth + 1);
  }
}
