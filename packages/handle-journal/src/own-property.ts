/**
 * Sets an own enumerable data property, `__proto__` included, without touching any prototype:
 * only a key that is exactly `__proto__` could reach one, so only it goes through
 * `Object.defineProperty`.
 */
export function defineOwn(target: object, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    (target as Record<string, unknown>)[key] = value;
  }
}
