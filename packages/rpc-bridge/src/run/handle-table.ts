import { RpcTarget } from "cloudflare:workers";
import { handleKindOf, handle as handleSymbols } from "@durablekit/handle-journal";
import { BridgeError } from "../errors";
import type { HostModuleEntry } from "../modules/module-registry";
import { type FunctionDescriptor, TAG, type TargetDescriptor } from "../shared/wire";
import { MAX_DEPTH } from "../values/data-size";

/** A host module's exports, as a handle (ids 1..n in every run; never disposed). */
export interface ModuleHandle {
  kind: "module";
  id: number;
  module: HostModuleEntry;
}

/**
 * An RpcTarget a call returned, or one registered before its object exists (a replay hands the
 * program a journaled object at once and revives it at its first live call: `replay-handles.ts`).
 */
export interface TargetHandle {
  kind: "target";
  id: number;
  /** The object; `null` until it exists (then {@link HandleTable.attach} gives it one). */
  target: object | null;
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
  /** Objects more than one handle reaches (see {@link attach}): every handle that does. */
  readonly #sharers = new Map<object, Set<TargetHandle>>();
  readonly #maxHandles: number;
  /**
   * Target handles held before their objects exist (they have no object in `#byValue`): held all
   * the same, so `maxHandles` counts them as the live run counted their objects.
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

  /** How many returned objects and functions are held now (those whose objects do not exist yet included). */
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
   * Registers a target handle whose object does not exist yet (a replay's journaled object): the
   * program gets the usual descriptor with `methods`, and {@link attach} gives it its object later.
   * Counted toward `maxHandles`, never refused (the answer holding it was admitted when recorded).
   * `label` is `"<specifier>#<Kind>"`; the new id is pushed to `fresh`.
   */
  addPending(
    label: string,
    methods: readonly string[],
    creatorKey: string,
    fresh: number[],
  ): TargetHandle {
    const id = this.#next++;
    this.#unrevived++;
    const at = label.lastIndexOf("#");
    const descriptor: TargetDescriptor = { [TAG]: "t", id, k: label, m: [...methods] };
    const entry: TargetHandle = {
      kind: "target",
      id,
      target: null,
      handleKind: label.slice(at + 1),
      label,
      specifier: label.slice(0, at),
      methods: new Set(methods),
      creatorKey,
      descriptor,
    };
    this.#entries.set(id, entry);
    fresh.push(id);
    return entry;
  }

  /**
   * Gives a handle registered by {@link addPending} its object, once. When another handle already
   * holds that object (a host keeping one object per id, which a live call returned before this
   * handle got it), both reach it and it is released once, when the last of them goes.
   */
  attach(entry: TargetHandle, target: object): void {
    if (entry.target !== null) return;
    entry.target = target;
    this.#unrevived--;
    const holder = this.#byValue.get(target);
    if (holder === undefined) {
      this.#byValue.set(target, entry);
    } else {
      const sharers = this.#sharers.get(target) ?? new Set([holder as TargetHandle]);
      sharers.add(entry);
      this.#sharers.set(target, sharers);
    }
  }

  /** The handle that holds an object or function, when the table holds it. */
  handleOf(value: object): TargetHandle | FunctionHandle | undefined {
    return this.#byValue.get(value);
  }

  /** The kinds module `specifier`'s `[handle.revive]` map can revive (empty when it has none). */
  revivableKinds(specifier: string): ReadonlySet<string> {
    return this.#revivable.get(specifier) ?? new Set();
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
   * handle whose object never came to exist, or an object another handle still reaches: there is
   * nothing to release).
   */
  forget(id: number): object | undefined {
    const entry = this.#entries.get(id);
    if (!entry || entry.kind === "module") return undefined;
    this.#entries.delete(id);
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
