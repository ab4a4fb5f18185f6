import { toErrorRecord } from "../src/error-record";

/**
 * Strict structural equality for codec round trips: same types and prototypes, `Object.is` for
 * primitives (NaN, -0), same own key order, Map/Set order, typed-array class and bytes, errors by
 * class and record. Returns the first difference as a path, or undefined when equal.
 */
export function difference(a: unknown, b: unknown, path = "value"): string | undefined {
  if (typeof a !== typeof b) return `${path}: ${typeof a} vs ${typeof b}`;
  if (typeof a !== "object" || a === null || b === null) {
    return Object.is(a, b) ? undefined : `${path}: ${String(a)} vs ${String(b)}`;
  }
  const x = a as object;
  const y = b as object;
  // Errors are equal by record: the recorded name picks the class on decode.
  if (x instanceof Error) {
    if (!(y instanceof Error)) return `${path}: error vs non-error`;
    return JSON.stringify(toErrorRecord(x)) === JSON.stringify(toErrorRecord(y))
      ? undefined
      : `${path}: errors`;
  }
  if (Object.getPrototypeOf(x) !== Object.getPrototypeOf(y)) {
    const px = Object.getPrototypeOf(x);
    const py = Object.getPrototypeOf(y);
    // A null-prototype object decodes as a plain object.
    if (!(px === null && py === Object.prototype)) return `${path}: prototypes differ`;
  }
  if (x instanceof Date)
    return Object.is(x.getTime(), (y as Date).getTime()) ? undefined : `${path}: dates`;
  if (x instanceof RegExp) return String(x) === String(y) ? undefined : `${path}: regexps`;
  if (x instanceof URL) return x.href === (y as URL).href ? undefined : `${path}: urls`;
  if (x instanceof ArrayBuffer)
    return sameBytes(new Uint8Array(x), new Uint8Array(y as ArrayBuffer), path);
  if (ArrayBuffer.isView(x)) {
    const v = y as ArrayBufferView;
    return sameBytes(
      new Uint8Array(x.buffer, x.byteOffset, x.byteLength),
      new Uint8Array(v.buffer, v.byteOffset, v.byteLength),
      path,
    );
  }
  if (x instanceof Map) {
    const ex = [...x];
    const ey = [...(y as Map<unknown, unknown>)];
    return difference(ex, ey, `${path}<map>`);
  }
  if (x instanceof Set) return difference([...x], [...(y as Set<unknown>)], `${path}<set>`);
  if (Array.isArray(x)) {
    const ya = y as unknown[];
    if (x.length !== ya.length) return `${path}: length ${x.length} vs ${ya.length}`;
    for (let i = 0; i < x.length; i++) {
      const d = difference(x[i], ya[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  const kx = Object.keys(x);
  const ky = Object.keys(y);
  if (kx.join("\u0000") !== ky.join("\u0000"))
    return `${path}: keys ${JSON.stringify(kx)} vs ${JSON.stringify(ky)}`;
  for (const k of kx) {
    const d = difference(
      (x as Record<string, unknown>)[k],
      (y as Record<string, unknown>)[k],
      `${path}.${k}`,
    );
    if (d !== undefined) return d;
  }
  return undefined;
}

function sameBytes(x: Uint8Array, y: Uint8Array, path: string): string | undefined {
  if (x.length !== y.length) return `${path}: ${x.length} vs ${y.length} bytes`;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return `${path}: byte ${i}`;
  return undefined;
}
