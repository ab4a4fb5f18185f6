import { JournalError } from "./errors";

const serializeSymbol: unique symbol = Symbol.for("durablekit.handle.serialize") as never;
const reviveSymbol: unique symbol = Symbol.for("durablekit.handle.revive") as never;
const kindSymbol: unique symbol = Symbol.for("durablekit.handle.kind") as never;

/**
 * The two symbols of the handle protocol.
 *
 * - An object opts into replay by implementing `[handle.serialize]()`: it returns its own JSON
 *   (`{ id }`). Whoever knows which module made it (the bridge, or `encode`'s `handleKind`) builds
 *   the handle record `{ $handle: "<specifier>#<Kind>", value }` (see {@link handleRecord}).
 * - Its module declares `[handle.revive]: { Kind: (value) => object }`, the functions that turn the
 *   record's `value` back into a live object (see {@link createReviver}).
 * - Its class names its kind, one of those keys, as a static `[handle.kind]` (`static [handle.kind]
 *   = "Run"`): a string that survives minification, unlike the constructor's name, which is never
 *   used as a kind (see {@link handleKindOf}).
 *
 * The symbols are registered (`Symbol.for`), so two copies of this package agree on them.
 */
export const handle: {
  readonly serialize: typeof serializeSymbol;
  readonly revive: typeof reviveSymbol;
  readonly kind: typeof kindSymbol;
} = Object.freeze({ serialize: serializeSymbol, revive: reviveSymbol, kind: kindSymbol });

/**
 * The kind an object declares for itself: `[handle.kind]` on the object or its prototype chain,
 * else a static `[handle.kind]` on its class (inherited statics included), when it is a non-empty
 * string without `#`; `null` otherwise (nothing declared, malformed, or a getter that throws).
 * Never the constructor's name.
 */
export function handleKindOf(value: object): string | null {
  try {
    let kind = (value as { [kindSymbol]?: unknown })[kindSymbol];
    if (kind === undefined) {
      const ctor = (value as { constructor?: unknown }).constructor;
      if (typeof ctor === "function") kind = (ctor as { [kindSymbol]?: unknown })[kindSymbol];
    }
    return typeof kind === "string" && kind.length > 0 && !kind.includes("#") ? kind : null;
  } catch {
    return null;
  }
}

/** The durable form of an object handle: which module and kind revive it, and its own JSON. */
export interface HandleRecord {
  /** `"<module specifier>#<Kind>"`, e.g. `"codemode:jobs#Run"`. */
  $handle: string;
  /** The handle's own data (any value the codec carries), passed to its reviver. */
  value: unknown;
}

/** An object that can be journaled as a handle: `[handle.serialize]()` returns its own JSON. */
export interface Handle {
  [handle.serialize](): unknown;
}

/** The revive map a module declares: one function per kind. */
export type HandleReviveMap = Record<string, (value: unknown) => unknown>;

/** A module that can revive its handles (an object with a `[handle.revive]` map). */
export interface HandleRevivingModule {
  readonly [handle.revive]?: HandleReviveMap;
}

/** True for a `{ $handle: "<specifier>#<Kind>", value }` record (exactly those two keys). */
export function isHandleRecord(value: unknown): value is HandleRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const kind = (value as { $handle?: unknown }).$handle;
  if (typeof kind !== "string" || kind.indexOf("#") <= 0 || kind.endsWith("#")) return false;
  const keys = Object.keys(value);
  return keys.length === 2 && Object.hasOwn(value, "value");
}

/** True when `value` implements `[handle.serialize]()`. */
export function isHandle(value: unknown): value is Handle {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as Partial<Handle>)[handle.serialize] === "function"
  );
}

/**
 * Builds the handle record `{ $handle: "<specifier>#<kind>", value }` from a handle's own JSON
 * (what its `[handle.serialize]()` returned); used by whoever knows the creating module.
 * @throws JournalError `journal/invalid-argument` when `specifier` is empty or `kind` is empty or contains `#`.
 */
export function handleRecord(specifier: string, kind: string, value: unknown): HandleRecord {
  if (
    typeof specifier !== "string" ||
    typeof kind !== "string" ||
    specifier.length === 0 ||
    kind.length === 0 ||
    kind.includes("#")
  ) {
    throw new JournalError(
      "journal/invalid-argument",
      `Handle kind "${String(specifier)}#${String(kind)}" is not well formed: use a non-empty module specifier and a kind name without "#".`,
    );
  }
  return { $handle: `${specifier}#${kind}`, value };
}

/** Splits `"<specifier>#<Kind>"` at its last `#`. */
export function parseHandleKind(kind: string): { specifier: string; kind: string } {
  const at = kind.lastIndexOf("#");
  return { specifier: kind.slice(0, at), kind: kind.slice(at + 1) };
}

/**
 * Returns a `revive` function for {@link decode} that looks a record's module up in `modules`
 * (keyed by specifier) and calls that module's `[handle.revive][Kind](value)`. Kinds are per
 * module: two modules may both have a `Run`.
 * @throws JournalError `journal/invalid-argument` when `modules` is not an object;
 *   `journal/no-reviver` (from the returned function) when the module is not in
 *   `modules`, declares no `[handle.revive]` map, or has no function for the kind.
 */
export function createReviver(
  modules: Readonly<Record<string, HandleRevivingModule | undefined>>,
): (record: HandleRecord) => unknown {
  if (typeof modules !== "object" || modules === null) {
    throw new JournalError(
      "journal/invalid-argument",
      'createReviver takes the modules that create handles, keyed by specifier: createReviver({ "codemode:jobs": jobs }).',
    );
  }
  return (record) => {
    if (!isHandleRecord(record)) {
      throw new JournalError(
        "journal/invalid-argument",
        'A reviver takes a handle record { $handle: "<specifier>#<Kind>", value }.',
      );
    }
    const { specifier, kind } = parseHandleKind(record.$handle);
    const mod = Object.hasOwn(modules, specifier) ? modules[specifier] : undefined;
    if (mod === undefined) {
      throw new JournalError(
        "journal/no-reviver",
        `Cannot revive handle ${record.$handle}: module "${specifier}" is not among the modules given to createReviver. Pass the module that created the handle.`,
      );
    }
    const map = mod[handle.revive];
    if (map === undefined || map === null) {
      throw new JournalError(
        "journal/no-reviver",
        `Cannot revive handle ${record.$handle}: module "${specifier}" declares no [handle.revive] map. Add [handle.revive]: { ${kind}: (value) => … } to the module.`,
      );
    }
    const fn = Object.hasOwn(map, kind) ? map[kind] : undefined;
    if (typeof fn !== "function") {
      throw new JournalError(
        "journal/no-reviver",
        `Cannot revive handle ${record.$handle}: module "${specifier}" has no reviver for kind "${kind}" (it has: ${Object.keys(map).join(", ") || "none"}). Add ${kind} to its [handle.revive] map.`,
      );
    }
    return fn(record.value);
  };
}
