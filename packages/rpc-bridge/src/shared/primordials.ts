/**
 * The built-ins the isolate runtime uses, taken once when its module loads, before any program
 * code runs. A program may replace `Array.prototype.slice`, `Map.prototype.get`,
 * `globalThis.Promise`, `Function.prototype.call` or any other built-in: that changes what its own
 * code gets, never what the runtime does with its calls, answers and event log (test/
 * hostile-program.test.ts replaces each one in turn). Methods are "uncurried" through a bound
 * `Function.prototype.call` (a bound function keeps its target, so replacing `call`, `apply` or
 * `bind` later changes nothing); `Map`, `Set` and `WeakMap` have safe subclasses whose prototypes
 * hold their own copies of the methods. Used by the wire helpers too (host side, where nothing
 * replaces built-ins, they are the same functions).
 *
 * What this does not cover: accessors a program defines on `Array.prototype` indexes or on
 * `Object.prototype`, iterator prototypes (`%MapIteratorPrototype%.next`), and the methods of
 * platform objects (streams, signals). A program reaching for those breaks its own run; the host
 * validates and bounds whatever the isolate sends either way.
 */

const { bind, call } = Function.prototype;

/** `fn` as a function taking its `this` first: `uncurryThis(Array.prototype.push)(array, item)`. */
const uncurryThis = bind.bind(call) as <T, A extends unknown[], R>(
  fn: (this: T, ...args: A) => R,
) => (self: T, ...args: A) => R;

export const ReflectApply = Reflect.apply;
export const ReflectConstruct = Reflect.construct;

export const ObjectKeys = Object.keys;
export const ObjectHasOwn = Object.hasOwn;
export const ObjectGetPrototypeOf = Object.getPrototypeOf;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
export const ObjectFreeze = Object.freeze;
export const ObjectPrototype = Object.prototype;

export const ArrayIsArray = Array.isArray;
export const ArrayPrototype = Array.prototype;
export const ArrayPrototypeSlice = uncurryThis(Array.prototype.slice) as <T>(
  array: readonly T[],
  start?: number,
  end?: number,
) => T[];
export const ArrayPrototypePush = uncurryThis(Array.prototype.push) as <T>(
  array: T[],
  ...items: T[]
) => number;
export const ArrayPrototypeShift = uncurryThis(Array.prototype.shift) as <T>(
  array: T[],
) => T | undefined;
export const ArrayPrototypeSplice = uncurryThis(Array.prototype.splice) as <T>(
  array: T[],
  start: number,
  count: number,
) => T[];

export const SafePromise = Promise;
export const PromisePrototypeThen = uncurryThis(Promise.prototype.then) as <T, R = T>(
  promise: Promise<T>,
  onFulfilled?: ((value: T) => R | PromiseLike<R>) | null,
  onRejected?: ((reason: unknown) => R | PromiseLike<R>) | null,
) => Promise<R>;

/**
 * `promise.then(onFulfilled, onRejected)`: a platform promise's own `then`, never one a program put
 * on `Promise.prototype`; any other thenable's (a Workers RPC promise) as it is.
 */
export function thenOf<T, R>(
  promise: PromiseLike<T>,
  onFulfilled: (value: T) => R | PromiseLike<R>,
  onRejected?: (reason: unknown) => R | PromiseLike<R>,
): Promise<R> {
  if (promise instanceof SafePromise) {
    return PromisePrototypeThen(promise as Promise<T>, onFulfilled, onRejected);
  }
  return promise.then(onFulfilled, onRejected) as Promise<R>;
}

/** `Promise.reject(reason)`, without looking `Promise` or its methods up. */
export function promiseRejected<T = never>(reason: unknown): Promise<T> {
  return new SafePromise<T>((_resolve, reject) => reject(reason));
}

/**
 * A promise of `value`: a platform promise as it is (never its `then` looked up), any other value
 * (a program's own thenable included) resolved as `Promise.resolve` would.
 */
export function promiseOf<T>(value: T | PromiseLike<T>): Promise<T> {
  if (value instanceof SafePromise) return value as Promise<T>;
  return new SafePromise<T>((resolve) => resolve(value));
}

/** `Promise.race` of platform promises, without `Promise.race`, `Promise.resolve` or `then` looked up. */
export function promiseRace<T>(promises: readonly Promise<T>[]): Promise<T> {
  return new SafePromise<T>((resolve, reject) => {
    for (let i = 0; i < promises.length; i++) {
      PromisePrototypeThen(promises[i] as Promise<T>, resolve, reject);
    }
  });
}

/** Copies `unsafe`'s prototype methods onto `safe`'s own prototype, so later changes do not reach it. */
function makeSafe<C extends abstract new (...args: never[]) => object>(unsafe: C, safe: C): C {
  const from = unsafe.prototype as object;
  const to = safe.prototype as object;
  const keys = Reflect.ownKeys(from);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as PropertyKey;
    if (key === "constructor") continue;
    const descriptor = Reflect.getOwnPropertyDescriptor(from, key);
    if (descriptor !== undefined) Reflect.defineProperty(to, key, descriptor);
  }
  Object.freeze(to);
  return safe;
}

/** A `Map` whose methods are the platform's, whatever a program does to `Map.prototype`. */
export const SafeMap = makeSafe(Map, class SafeMap<K, V> extends Map<K, V> {});
/** A `Set` whose methods are the platform's, whatever a program does to `Set.prototype`. */
export const SafeSet = makeSafe(Set, class SafeSet<T> extends Set<T> {});
/** A `WeakMap` whose methods are the platform's, whatever a program does to `WeakMap.prototype`. */
export const SafeWeakMap = makeSafe(
  WeakMap,
  class SafeWeakMap<K extends WeakKey, V> extends WeakMap<K, V> {},
);

export const SafeStructuredClone = globalThis.structuredClone;
export const SafeString = String;
export const SafeNumber = Number;
export const SafeError = Error;
export const SafeURL = URL;
export const SafeDataView = DataView;
export const SafeArrayBuffer = ArrayBuffer;
export const SafeReadableStream = ReadableStream;
export const SafeAbortSignal = AbortSignal;
export const ArrayBufferIsView = ArrayBuffer.isView;
export const MathFloor = Math.floor;
export const MathMin = Math.min;
export const MathMax = Math.max;
export const MathRound = Math.round;
export const SymbolDispose: typeof Symbol.dispose = Symbol.dispose;
export const SymbolToStringTag: typeof Symbol.toStringTag = Symbol.toStringTag;
export const SymbolToPrimitive: typeof Symbol.toPrimitive = Symbol.toPrimitive;
