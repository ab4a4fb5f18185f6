import { BridgeError } from "../errors";

const READ_ONLY: unique symbol = Symbol.for("durablekit.rpc-bridge.read-only") as never;

/**
 * Marks a function as read-only: runs with `access: "read"` may call it. Works for a module's
 * exported function, a function a call returns, and a class method (`readOnly(Run.prototype.status)`,
 * or see {@link readOnlyMethods}). Everything not marked is a write, refused in read runs before it
 * runs. Returns the same function.
 * @throws BridgeError `bridge/invalid-argument` when `fn` is not a function.
 */
export function readOnly<F extends (...args: never[]) => unknown>(fn: F): F {
  if (typeof fn !== "function") {
    throw new BridgeError("bridge/invalid-argument", "readOnly() takes a function.");
  }
  Object.defineProperty(fn, READ_ONLY, { value: true, configurable: true });
  return fn;
}

/**
 * Marks methods of a class as read-only (see {@link readOnly}), by name:
 * `readOnlyMethods(Run, "status", "wait")`.
 * @throws BridgeError `bridge/invalid-argument` when `cls` is not a class or a name is not a method of its prototype chain.
 */
export function readOnlyMethods<C extends abstract new (...args: never[]) => object>(
  cls: C,
  ...names: Array<keyof InstanceType<C> & string>
): C {
  if (typeof cls !== "function") {
    throw new BridgeError(
      "bridge/invalid-argument",
      "readOnlyMethods() takes a class and method names.",
    );
  }
  for (const name of names) {
    const method = (cls.prototype as Record<string, unknown>)[name];
    if (typeof method !== "function") {
      throw new BridgeError(
        "bridge/invalid-argument",
        `readOnlyMethods(): ${cls.name}.prototype.${String(name)} is not a method.`,
      );
    }
    readOnly(method as (...args: never[]) => unknown);
  }
  return cls;
}

/** True when the function was marked with {@link readOnly} or {@link readOnlyMethods}. */
export function isReadOnly(fn: unknown): boolean {
  return typeof fn === "function" && (fn as unknown as Record<symbol, unknown>)[READ_ONLY] === true;
}
