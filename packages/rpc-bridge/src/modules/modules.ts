import type { BridgeHostFunction } from "../context";
import { BridgeError } from "../errors";

const HOST_META: unique symbol = Symbol.for("durablekit.rpc-bridge.host-module") as never;
const SOURCE_BRAND: unique symbol = Symbol.for("durablekit.rpc-bridge.source-module") as never;

/** Description of a class whose instances a host module's functions return, for `describeModules`. */
export interface BridgeClassDescription {
  /** One or two sentences on what an instance is. */
  description?: string;
  /**
   * Method signatures in TypeScript, without the name: `{ start: "(input: { ref: string }): Promise<Run>" }`.
   * Methods of the class not listed get `(...args: unknown[]): Promise<unknown>`.
   */
  methods?: Record<string, string>;
  /** The class itself: its prototype's methods are listed even when not in `methods`. */
  class?: abstract new (
    ...args: never[]
  ) => object;
}

/** What `describeModules` says about a host module. */
export interface BridgeHostModuleDescription {
  /** What the module is for, shown above its declarations. */
  description?: string;
  /** Export signatures in TypeScript, without the name: `{ createJob: "(options: { name: string }): Promise<Job>" }`. */
  exports?: Record<string, string>;
  /**
   * The kinds of objects the module's functions return, by the name used in signatures; a class
   * constructor alone lists its methods with unknown signatures.
   */
  classes?: Record<string, BridgeClassDescription | (abstract new (...args: never[]) => object)>;
}

/** The metadata {@link hostModule} and {@link privateModule} attach. */
export interface HostModuleMeta extends BridgeHostModuleDescription {
  /** Only source modules may import a private module; it is left out of descriptions. */
  private: boolean;
}

/** A host module: an object of functions, run in the host; each function is a named export. */
export type BridgeHostModule = { readonly [name: string]: BridgeHostFunction };

/** A source module: JavaScript run in the isolate, which may import host modules, private ones included. */
export interface BridgeSourceModule {
  readonly [SOURCE_BRAND]: true;
  /** ES module source. */
  readonly source: string;
  /** What the module is for, for `describeModules`. */
  readonly description?: string;
  /** TypeScript declarations of its exports, for `describeModules` (the body of its `declare module`). */
  readonly declarations?: string;
}

/** One entry of the `modules` option: a host module (object of functions) or a source module. */
export type BridgeModuleDefinition = BridgeHostModule | BridgeSourceModule | string;

/** The modules programs may import, by specifier (e.g. `"codemode:jobs"`). */
export type BridgeModuleMap = Readonly<Record<string, BridgeModuleDefinition>>;

function withMeta<T extends object>(functions: T, meta: HostModuleMeta): T {
  if (typeof functions !== "object" || functions === null) {
    throw new BridgeError(
      "bridge/invalid-argument",
      "A host module is an object of functions, e.g. hostModule({ createJob, status }).",
    );
  }
  const copy = Object.create(
    Object.getPrototypeOf(functions),
    Object.getOwnPropertyDescriptors(functions),
  ) as T;
  Object.defineProperty(copy, HOST_META, { value: Object.freeze(meta) });
  return copy;
}

/**
 * A host module with a description for `describeModules`. Returns a copy of `functions` carrying
 * it (symbol-keyed properties such as handle-journal's `handle.revive` are kept).
 * @throws BridgeError `bridge/invalid-argument` when `functions` is not an object.
 */
export function hostModule<T extends object>(
  functions: T,
  description?: BridgeHostModuleDescription,
): T {
  return withMeta(functions, { ...description, private: false });
}

/**
 * A private host module: source modules may import it, programs may not (a program that does is
 * refused before anything runs), and `describeModules` leaves it out. Use it for the host half of
 * a module whose public face is a source module.
 * @throws BridgeError `bridge/invalid-argument` when `functions` is not an object.
 */
export function privateModule<T extends object>(
  functions: T,
  description?: BridgeHostModuleDescription,
): T {
  return withMeta(functions, { ...description, private: true });
}

/**
 * A source module with a description and declarations for `describeModules`.
 * @throws BridgeError `bridge/invalid-argument` when `source` is not a string.
 */
export function sourceModule(
  source: string,
  meta?: { description?: string; declarations?: string },
): BridgeSourceModule {
  if (typeof source !== "string") {
    throw new BridgeError(
      "bridge/invalid-argument",
      "sourceModule takes the module's source text.",
    );
  }
  return Object.freeze({ [SOURCE_BRAND]: true as const, source, ...meta });
}

/** The metadata of a host module, or undefined for a plain object of functions. */
export function hostModuleMeta(module: object): HostModuleMeta | undefined {
  return (module as Record<symbol, HostModuleMeta | undefined>)[HOST_META];
}

/** True for a string or a {@link sourceModule}. */
export function isSourceModule(definition: unknown): definition is BridgeSourceModule | string {
  return (
    typeof definition === "string" ||
    (typeof definition === "object" &&
      definition !== null &&
      (definition as Record<symbol, unknown>)[SOURCE_BRAND] === true)
  );
}
