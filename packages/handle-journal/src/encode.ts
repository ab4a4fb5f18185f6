import { utf8ByteLength } from "@durablekit/compose";
import { toBase64 } from "./base64";
import {
  type Annotation,
  BINARY_KINDS,
  C_BASE64,
  C_ERROR,
  C_HANDLE,
  C_UNSAFE,
  type Children,
  CUSTOM,
  escapeKey,
  T_BIGINT,
  T_DATE,
  T_MAP,
  T_NUMBER,
  T_REGEXP,
  T_SET,
  T_UNDEFINED,
  T_URL,
} from "./codec-format";
import { toErrorRecord } from "./error-record";
import { CodecError, JournalError, type JournalErrorCode } from "./errors";
import { handle, isHandleRecord } from "./handle";
import { defineOwn } from "./own-property";
import { isUnsafeToRepeat } from "./unsafe";

// ── Options ──────────────────────────────────────────────────────────────────

/** Options of {@link encode} and {@link encodedSize}. */
export interface JournalEncodeOptions {
  /** Refuse encodings larger than this many UTF-8 bytes (CodecError code "journal/too-large"). */
  maxValueBytes?: number;
  /** Label of the root in error paths, e.g. "args" → "args[0].when". Default "value". */
  path?: string;
  /** Refuse nesting deeper than this many containers ("journal/too-deep"). Default 100. */
  maxDepth?: number;
  /**
   * Carry values marked {@link unsafeToRepeat} as `{ "$unsafe": "<kind>" }` records instead of
   * refusing them; decoding such a record fails with `journal/unsafe-to-repeat` unless
   * `JournalDecodeOptions.unsafe` says otherwise. Default false.
   */
  allowUnsafe?: boolean;
  /**
   * Names a handle's module and kind, `"<specifier>#<Kind>"`: a handle's `[handle.serialize]()`
   * returns only its own JSON (`{ id }`), and whoever knows which module made it (the bridge)
   * builds the record `{ "$handle": handleKind(h), "value": h[handle.serialize]() }`. Without it,
   * encoding a handle is refused (`journal/unserializable`).
   */
  handleKind?: (handle: object) => string;
}

/** Default of {@link JournalEncodeOptions.maxDepth}. */
export const DEFAULT_MAX_DEPTH = 100;

// ── Error paths ──────────────────────────────────────────────────────────────
// `args[0].when`, `value.m.get("k")`, `value.s.values()[1]`: built only when an error names them.

/**
 * A step in an error path that is not a property or index: a Map key or value, a Set element, a
 * handle's value. Its text is built only when an error names the path.
 */
class Step {
  constructor(
    readonly kind: "key" | "value" | "element" | "handle",
    readonly index: number,
    readonly key?: unknown,
  ) {}

  get text(): string {
    switch (this.kind) {
      case "key":
        return `.keys()[${this.index}]`;
      case "value":
        return typeof this.key === "string" || typeof this.key === "number"
          ? `.get(${JSON.stringify(this.key)})`
          : `.values()[${this.index}]`;
      case "element":
        return `.values()[${this.index}]`;
      default:
        return "[handle.serialize]().value";
    }
  }
}

/** One step of a path: a property, an index, or a {@link Step}. */
type Segment = string | number | Step;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

// ── Annotations ──────────────────────────────────────────────────────────────
// The annotation tree of an encoding (see codec-format.ts), built bottom-up during the walk.

/**
 * Adds a child's annotation under `escaped`, flattening an untyped child into dotted paths;
 * returns the children record, created on first use.
 */
function addChild(
  children: Children | undefined,
  escaped: string,
  annotation: Annotation,
): Children {
  const out = children ?? {};
  if (Array.isArray(annotation)) {
    defineOwn(out, escaped, annotation);
    return out;
  }
  const nested = annotation as Children;
  for (const path of Object.keys(nested))
    defineOwn(out, `${escaped}.${path}`, nested[path] as Annotation);
  return out;
}

function kindName(value: object): string {
  const ctor = (value as { constructor?: { name?: unknown } }).constructor;
  if (typeof ctor === "function" && typeof ctor.name === "string" && ctor.name.length > 0)
    return ctor.name;
  return Object.prototype.toString.call(value).slice(8, -1);
}

/**
 * One encoding's walk. It validates and transforms in one pass, copying a container only when
 * something inside it changes, so plain JSON data is walked once and stringified once; every
 * value JSON cannot carry is turned into JSON and typed by an annotation (see codec-format.ts),
 * or refused with the path of the offending value.
 */
class Encoder {
  /** The annotation of the value the last `walk` returned (`undefined`: plain JSON). */
  ann: Annotation | undefined = undefined;
  /** The containers being walked, root first (for cycle detection and depth). */
  readonly #ancestors: object[] = [];
  /** The path steps to the value being walked, root first; `#segments[i]` leads into `#ancestors[i]`'s child. */
  readonly #segments: Segment[] = [];
  readonly #label: string;
  readonly #maxDepth: number;
  readonly #allowUnsafe: boolean;
  readonly #handleKind: ((handle: object) => string) | undefined;

  constructor(
    label: string,
    maxDepth: number,
    allowUnsafe: boolean,
    handleKind: ((handle: object) => string) | undefined,
  ) {
    this.#label = label;
    this.#maxDepth = maxDepth;
    this.#allowUnsafe = allowUnsafe;
    this.#handleKind = handleKind;
  }

  // ── Plain JSON ─────────────────────────────────────────────────────────────

  walk(value: unknown): unknown {
    switch (typeof value) {
      case "string":
      case "boolean":
        this.ann = undefined;
        return value;
      case "number":
        if (value === 0) {
          if (1 / value > 0) {
            this.ann = undefined;
            return value;
          }
          return this.#special(value);
        }
        if (Number.isFinite(value)) {
          this.ann = undefined;
          return value;
        }
        return this.#special(value);
      case "object":
        if (value === null) {
          this.ann = undefined;
          return null;
        }
        return this.#object(value);
      default:
        return this.#special(value);
    }
  }

  #object(value: object): unknown {
    const ancestors = this.#ancestors;
    if (ancestors.includes(value)) {
      const at = ancestors.indexOf(value);
      throw this.#refuse(
        "journal/unserializable",
        `refers back to ${this.#pathString(at)} (a cycle); the codec carries trees only. Break the cycle or pass an id instead`,
      );
    }
    if (ancestors.length >= this.#maxDepth) {
      throw this.#refuse(
        "journal/too-deep",
        `is nested deeper than ${this.#maxDepth} levels; flatten the value or raise maxDepth`,
      );
    }
    const proto = Object.getPrototypeOf(value);
    if (proto === Array.prototype) return this.#array(value as unknown[]);
    if (
      (proto === Object.prototype || proto === null) &&
      typeof (value as { [handle.serialize]?: unknown })[handle.serialize] !== "function"
    ) {
      return this.#plain(value as Record<string, unknown>);
    }
    return this.#instance(value, proto);
  }

  #array(value: readonly unknown[]): unknown {
    const length = value.length;
    let out: unknown[] | undefined;
    let children: Children | undefined;
    const segments = this.#segments;
    this.#ancestors.push(value);
    const top = segments.push(0) - 1;
    for (let i = 0; i < length; i++) {
      segments[top] = i;
      const item = value[i];
      const next = this.walk(item);
      const ann = this.ann;
      if (ann !== undefined) children = addChild(children, String(i), ann);
      // Copy-on-change: `out` exists only once an item differs from its input.
      if (out !== undefined) out.push(next);
      else if (next !== item) {
        out = value.slice(0, i);
        out.push(next);
      }
    }
    segments.pop();
    this.#ancestors.pop();
    this.ann = children;
    return out ?? value;
  }

  #plain(value: Record<string, unknown>): unknown {
    const keys = Object.keys(value);
    let out: Record<string, unknown> | undefined;
    let children: Children | undefined;
    const segments = this.#segments;
    this.#ancestors.push(value);
    const top = segments.push("") - 1;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      segments[top] = key;
      const item = value[key];
      const next = this.walk(item);
      const ann = this.ann;
      if (ann !== undefined) children = addChild(children, escapeKey(key), ann);
      // Copy-on-change, with own data properties only (a `__proto__` key stays a key).
      if (out !== undefined) defineOwn(out, key, next);
      else if (next !== item) {
        out = {};
        for (let j = 0; j < i; j++) defineOwn(out, keys[j] as string, value[keys[j] as string]);
        defineOwn(out, key, next);
      }
    }
    segments.pop();
    this.#ancestors.pop();
    this.ann = children;
    return out ?? value;
  }

  // ── Typed values ───────────────────────────────────────────────────────────

  /** A primitive JSON cannot carry (-0, NaN, ±Infinity, undefined, bigint, symbol) or a function. */
  #special(value: unknown): unknown {
    switch (typeof value) {
      case "number":
        this.ann = [T_NUMBER];
        if (value === 0) return "-0";
        return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
      case "undefined":
        this.ann = [T_UNDEFINED];
        return null;
      case "bigint":
        this.ann = [T_BIGINT];
        return value.toString();
      case "function":
        if (typeof (value as { [handle.serialize]?: unknown })[handle.serialize] === "function") {
          return this.#handle(value);
        }
        if (isUnsafeToRepeat(value)) return this.#unsafe("function");
        throw this.#refuse(
          "journal/unserializable",
          "is a function; the codec carries data, errors and handles only. Return data or a handle ([handle.serialize]); in a replayable run a callback may be wrapped in unsafeToRepeat(...)",
        );
      default:
        throw this.#refuse(
          "journal/unserializable",
          `is a ${typeof value}; the codec carries data, errors and handles only. Use a string instead`,
        );
    }
  }

  /** An object that is neither an array nor a plain object, or one that is a handle. */
  #instance(value: object, proto: unknown): unknown {
    // Exact built-in prototypes first (identity checks are the cheapest dispatch); subclasses,
    // handles and values from other realms take the general path below.
    if (proto === Date.prototype) return this.#date(value as Date);
    if (proto === Map.prototype) return this.#map(value as Map<unknown, unknown>);
    if (proto === Set.prototype) return this.#set(value as Set<unknown>);
    if (typeof (value as { [handle.serialize]?: unknown })[handle.serialize] === "function") {
      return this.#handle(value);
    }
    if (value instanceof Error) return this.#error(value);
    if (value instanceof Date) return this.#date(value);
    if (value instanceof Map) return this.#map(value);
    if (value instanceof Set) return this.#set(value);
    if (value instanceof RegExp) {
      this.ann = [T_REGEXP];
      return `/${value.source}/${value.flags}`;
    }
    if (value instanceof URL) {
      this.ann = [T_URL];
      return value.href;
    }
    if (ArrayBuffer.isView(value)) {
      for (const [Ctor, name] of BINARY_KINDS) {
        if (value instanceof Ctor) {
          this.ann = [[CUSTOM, C_BASE64 + name]];
          return toBase64(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
        }
      }
    }
    if (value instanceof ArrayBuffer) {
      this.ann = [[CUSTOM, `${C_BASE64}ArrayBuffer`]];
      return toBase64(new Uint8Array(value));
    }
    if (Array.isArray(value)) return this.#array(value);
    // An error from another realm fails `instanceof Error` but keeps its brand.
    if (Object.prototype.toString.call(value) === "[object Error]") return this.#error(value);
    if (isUnsafeToRepeat(value)) return this.#unsafe(kindName(value));
    throw this.#refuse(
      "journal/unserializable",
      `is an instance of ${kindName(value)}, which is neither plain data nor a handle; convert it to plain data or implement [handle.serialize]()`,
    );
  }

  #date(value: Date): string {
    this.ann = [T_DATE];
    return Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString();
  }

  #error(value: object): unknown {
    this.ann = [[CUSTOM, C_ERROR]];
    return toErrorRecord(value);
  }

  #map(value: Map<unknown, unknown>): unknown {
    const out: unknown[] = [];
    let children: Children | undefined;
    const segments = this.#segments;
    this.#ancestors.push(value);
    const top = segments.push("") - 1;
    let i = 0;
    for (const [k, v] of value) {
      segments[top] = new Step("key", i);
      const key = this.walk(k);
      if (this.ann !== undefined) children = addChild(children, `${i}.0`, this.ann);
      segments[top] = new Step("value", i, k);
      const item = this.walk(v);
      if (this.ann !== undefined) children = addChild(children, `${i}.1`, this.ann);
      out.push([key, item]);
      i++;
    }
    segments.pop();
    this.#ancestors.pop();
    this.ann = children === undefined ? [T_MAP] : [T_MAP, children];
    return out;
  }

  #set(value: Set<unknown>): unknown {
    const out: unknown[] = [];
    let children: Children | undefined;
    const segments = this.#segments;
    this.#ancestors.push(value);
    const top = segments.push("") - 1;
    let i = 0;
    for (const v of value) {
      segments[top] = new Step("element", i);
      out.push(this.walk(v));
      if (this.ann !== undefined) children = addChild(children, String(i), this.ann);
      i++;
    }
    segments.pop();
    this.#ancestors.pop();
    this.ann = children === undefined ? [T_SET] : [T_SET, children];
    return out;
  }

  /** A handle: the record's kind from `handleKind`, its value the handle's own JSON. */
  #handle(value: object): unknown {
    const handleKind = this.#handleKind;
    if (handleKind === undefined) {
      throw this.#refuse(
        "journal/unserializable",
        'is a handle, but nothing names its module and kind: encode it with { handleKind: (h) => "<specifier>#<Kind>" } (the bridge does)',
      );
    }
    let kind: unknown;
    let own: unknown;
    try {
      kind = handleKind(value);
    } catch (cause) {
      throw this.#refuse("journal/unserializable", "is a handle whose handleKind threw", cause);
    }
    try {
      own = (value as { [handle.serialize]: () => unknown })[handle.serialize]();
    } catch (cause) {
      throw this.#refuse("journal/unserializable", "threw from its [handle.serialize]()", cause);
    }
    const record = { $handle: kind, value: own };
    if (!isHandleRecord(record)) {
      throw this.#refuse(
        "journal/unserializable",
        `is a handle whose handleKind gave ${typeof kind === "string" ? JSON.stringify(kind) : typeof kind}, not "<specifier>#<Kind>"`,
      );
    }
    // The handle object itself is the ancestor, so a record whose value refers back to it is a cycle.
    this.#ancestors.push(value);
    const top = this.#segments.push(new Step("handle", 0)) - 1;
    const inner = this.walk(record.value);
    const ann = this.ann;
    this.#segments.length = top;
    this.#ancestors.pop();
    if (ann === undefined) this.ann = [[CUSTOM, C_HANDLE]];
    else {
      this.ann = [[CUSTOM, C_HANDLE], addChild(undefined, "value", ann)];
    }
    return { $handle: record.$handle, value: inner };
  }

  #unsafe(kind: string): unknown {
    if (!this.#allowUnsafe) {
      throw this.#refuse(
        "journal/unserializable",
        `is a ${kind} marked unsafeToRepeat; it cannot be journaled. Record the call with outcome "unsafe" instead of encoding it`,
      );
    }
    this.ann = [[CUSTOM, C_UNSAFE]];
    return { $unsafe: kind };
  }

  // ── Refusals ───────────────────────────────────────────────────────────────

  /** The path of the value being walked, or of the ancestor at `depth` when given. */
  #pathString(depth = this.#segments.length): string {
    let path = this.#label;
    for (let i = 0; i < depth; i++) {
      const s = this.#segments[i] as Segment;
      if (typeof s === "number") path += `[${s}]`;
      else if (typeof s === "string")
        path += IDENTIFIER.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
      else path += s.text;
    }
    return path;
  }

  /** The error refusing the value being walked; `reason` completes "Cannot encode <path>: it …". */
  #refuse(code: JournalErrorCode, reason: string, cause?: unknown): CodecError {
    const path = this.#pathString();
    return new CodecError(code, path, `Cannot encode ${path}: it ${reason}.`, { cause });
  }
}

// ── Public functions ─────────────────────────────────────────────────────────

function checkOptions(options: JournalEncodeOptions | undefined): void {
  if (options === undefined) return;
  if (typeof options !== "object" || options === null) {
    throw new JournalError(
      "journal/invalid-argument",
      "Encode options must be an object such as { maxValueBytes, path, maxDepth }.",
    );
  }
  const { maxValueBytes, maxDepth, path, handleKind } = options;
  if (handleKind !== undefined && typeof handleKind !== "function") {
    throw new JournalError(
      "journal/invalid-argument",
      `handleKind must be a function from a handle to "<specifier>#<Kind>"; got ${typeof handleKind}.`,
    );
  }
  if (maxValueBytes !== undefined && !(typeof maxValueBytes === "number" && maxValueBytes >= 0)) {
    throw new JournalError(
      "journal/invalid-argument",
      `maxValueBytes must be a number of bytes (at least 0); got ${String(maxValueBytes)}.`,
    );
  }
  if (maxDepth !== undefined && !(typeof maxDepth === "number" && maxDepth >= 0)) {
    throw new JournalError(
      "journal/invalid-argument",
      `maxDepth must be a number of levels (at least 0); got ${String(maxDepth)}.`,
    );
  }
  if (path !== undefined && typeof path !== "string") {
    throw new JournalError(
      "journal/invalid-argument",
      `path must be a string label such as "args"; got ${typeof path}.`,
    );
  }
}

/** Walks and stringifies; `options.maxValueBytes` is checked by the callers. */
function encodeText(value: unknown, options: JournalEncodeOptions | undefined): string {
  checkOptions(options);
  // A call's arguments are most often a short array of JSON primitives: JSON already, no walk.
  if (isFlatJsonArray(value) && (options?.maxDepth ?? DEFAULT_MAX_DEPTH) >= 1) {
    return `{"json":${JSON.stringify(value)}}`;
  }
  const encoder = new Encoder(
    options?.path ?? "value",
    options?.maxDepth ?? DEFAULT_MAX_DEPTH,
    options?.allowUnsafe ?? false,
    options?.handleKind,
  );
  const tree = encoder.walk(value);
  const ann = encoder.ann;
  const json = JSON.stringify(tree);
  return ann === undefined
    ? `{"json":${json}}`
    : `{"json":${json},"meta":{"values":${JSON.stringify(ann)},"v":1}}`;
}

/** Most items {@link isFlatJsonArray} looks at; longer arrays take the walk. */
const FLAT_MAX_ITEMS = 16;

/**
 * True for an array (of the realm's `Array`, no holes) of at most {@link FLAT_MAX_ITEMS} strings,
 * booleans, nulls and finite numbers other than -0: what the walk leaves unchanged and
 * unannotated, so its encoding is its JSON.
 */
function isFlatJsonArray(value: unknown): value is unknown[] {
  if (!Array.isArray(value) || value.length > FLAT_MAX_ITEMS) return false;
  if (Object.getPrototypeOf(value) !== Array.prototype) return false;
  for (let i = 0; i < value.length; i++) {
    const v: unknown = value[i];
    if (typeof v === "string" || typeof v === "boolean" || v === null) continue;
    if (typeof v === "number" && Number.isFinite(v) && (v !== 0 || 1 / v > 0)) continue;
    return false;
  }
  return true;
}

function sizeOf(text: string, options: JournalEncodeOptions | undefined): number {
  const max = options?.maxValueBytes;
  // A UTF-16 code unit is 1 to 3 UTF-8 bytes, so the exact count is needed only in between.
  if (max !== undefined && text.length > max) tooLarge(text.length, max, options, true);
  const bytes = utf8ByteLength(text);
  if (max !== undefined && bytes > max) tooLarge(bytes, max, options, false);
  return bytes;
}

function tooLarge(
  bytes: number,
  max: number,
  options: JournalEncodeOptions | undefined,
  atLeast: boolean,
): never {
  const path = options?.path ?? "value";
  throw new CodecError(
    "journal/too-large",
    path,
    `Cannot encode ${path}: its encoding is ${atLeast ? "at least " : ""}${bytes} bytes, over the limit of ${max}. Pass a smaller value (e.g. an id or a stream) or raise maxValueBytes.`,
  );
}

/**
 * Encodes a value to JSON text: JSON plus Date, Map, Set, BigInt, undefined, NaN/±Infinity/-0,
 * RegExp, URL, typed arrays/ArrayBuffer/DataView (base64), errors (as `{ "$error": … }` records)
 * and handles (as `{ "$handle": handleKind(h), "value": h[handle.serialize]() }` records).
 * Plain objects are data, including ones shaped like records. Shared (non-cyclic) references are
 * written once per occurrence.
 * @throws CodecError `journal/unserializable` (function, symbol, cycle, class instance),
 *   `journal/too-deep`, `journal/too-large`; its `path` names the offending value, e.g. `args[0].when`.
 *   JournalError `journal/invalid-argument` for malformed options.
 */
export function encode(value: unknown, options?: JournalEncodeOptions): string {
  const text = encodeText(value, options);
  if (options?.maxValueBytes !== undefined) sizeOf(text, options);
  return text;
}

/**
 * Same checks as {@link encode}, returning the encoding's UTF-8 byte length (for limits).
 * @throws CodecError as {@link encode}.
 */
export function encodedSize(value: unknown, options?: JournalEncodeOptions): number {
  return sizeOf(encodeText(value, options), options);
}
