/**
 * Replaces a property of a global object or prototype (a method, a constructor) with `value`, as
 * a writable, configurable, non-enumerable own property: what the platform's own methods are.
 * Answers false, and changes nothing, when the property cannot be redefined.
 */
export function replaceProperty(target: object, key: PropertyKey, value: unknown): boolean {
  const existing = Object.getOwnPropertyDescriptor(target, key);
  if (existing !== undefined && !existing.configurable) return false;
  Object.defineProperty(target, key, {
    value,
    writable: true,
    configurable: true,
    enumerable: false,
  });
  return true;
}
