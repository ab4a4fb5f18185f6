/**
 * Marks are a registered-symbol property (so two copies of this package agree) or, for objects
 * that cannot take a property (frozen, sealed, some host objects), membership in a WeakSet.
 */
const MARK = Symbol.for("durablekit.unsafeToRepeat");
const marked = new WeakSet<object>();

/**
 * Marks a function, callback or stream as allowed in a replayable run on one condition: a replay
 * that reaches it fails the run (`journal/unsafe-to-repeat`) instead of running it again.
 * Returns `value` itself. Primitives cannot be marked and are returned unchanged.
 */
export function unsafeToRepeat<T>(value: T): T {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return value;
  const target = value as object;
  if (Object.isExtensible(target)) {
    try {
      Object.defineProperty(target, MARK, { value: true, enumerable: false, configurable: false });
      return value;
    } catch {
      // A host object may refuse the property; the WeakSet below still marks it.
    }
  }
  marked.add(target);
  return value;
}

/** True when `value` was passed to {@link unsafeToRepeat}. */
export function isUnsafeToRepeat(value: unknown): boolean {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  return (value as Record<symbol, unknown>)[MARK] === true || marked.has(value);
}
