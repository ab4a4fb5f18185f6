import { toBase64 } from "./base64";
import {
  type Annotation,
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
  utf8ByteLength,
} from "./codec-format";
import { formatPath, type Segment, Step } from "./encode-path";
import { toErrorRecord } from "./error-record";
import { CodecError, type JournalErrorCode } from "./errors";
import { handle, isHandleRecord } from "./handle";
import { isUnsafeToRepeat } from "./unsafe";

/** Options of {@link encode} and {@link encodedSize}. */
export interface EncodeOptions {
  /** Refuse encodings larger than this many UTF-8 bytes (CodecError code "journal/too-large"). */
  maxBytes?: number;
  /** Label of the root in error paths, e.g. "args" → "args[0].when". Default "value". */
  path?: string;
  /** Refuse nesting deeper than this many containers ("journal/too-deep"). Default 100. */
  maxDepth?: number;
  /**
   * Carry values marked {@link unsafeToRepeat} as `{ "$unsafe": "<kind>" }` records instead of
   * refusing them; decoding such a record fails with `journal/unsafe-to-repeat` unless
   * `DecodeOptions.unsafe` says otherwise. Default false.
   */
  allowUnsafe?: boolean;
}

/** Default of {@link EncodeOptions.maxDepth}. */
export const DEFAULT_MAX_DEPTH = 100;

const BINARY: ReadonlyArray<readonly [abstract new (...args: never[]) => ArrayBufferView, string]> =
  [
    [Uint8Array, "Uint8Array"],
    [Int8Array, "Int8Array"],
    [Uint8ClampedArray, "Uint8ClampedArray"],
    [Int16Array, "Int16Array"],
    [Uint16Array, "Uint16Array"],
    [Int32Array, "Int32Array"],
    [Uint32Array, "Uint32Array"],
    [Float32Array, "Float32Array"],
    [Float64Array, "Float64Array"],
    [BigInt64Array, "BigInt64Array"],
    [BigUint64Array, "BigUint64Array"],
    [DataView, "DataView"],
  ];

function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    target[key] = value;
  }
}

/**
 * Adds a child's annotation under `escaped`, flattening an untyped child into dotted paths;
 * returns the children record, created on first use.
 */
function addChild(
  children: Children | undefined,
  escaped: string,
  annotation: Annotation,
): Children {
  const out = children ?? newChildren();
  if (Array.isArray(annotation)) {
    setPath(out, escaped, annotation);
    return out;
  }
  const nested = annotation as Children;
  for (const path of Object.keys(nested))
    setPath(out, `${escaped}.${path}`, nested[path] as Annotation);
  return out;
}

/** Only a key that is exactly `__proto__` could reach a prototype; it is defined as own data. */
function setPath(children: Children, path: string, annotation: Annotation): void {
  if (path === "__proto__") {
    Object.defineProperty(children, path, {
      value: annotation,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    children[path] = annotation;
  }
}

function newChildren(): Children {
  return {};
}

/**
 * One encoding pass: validates and transforms in the same walk, copying a container only when
 * something inside it changes, so plain JSON data is walked once and stringified once.
 */
class Encoder {
  /** The annotation of the value the last `walk` returned. */
  ann: Annotation | undefined = undefined;
  private readonly ancestors: object[] = [];
  private readonly segments: Segment[] = [];

  constructor(
    private readonly label: string,
    private readonly maxDepth: number,
    private readonly allowUnsafe: boolean,
  ) {}

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
          this.ann = [T_NUMBER];
          return "-0";
        }
        if (Number.isFinite(value)) {
          this.ann = undefined;
          return value;
        }
        this.ann = [T_NUMBER];
        return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
      case "undefined":
        this.ann = [T_UNDEFINED];
        return null;
      case "bigint":
        this.ann = [T_BIGINT];
        return value.toString();
      case "object":
        if (value === null) {
          this.ann = undefined;
          return null;
        }
        return this.object(value);
      case "function":
        if (typeof (value as { [handle.serialize]?: unknown })[handle.serialize] === "function") {
          return this.handle(value);
        }
        if (isUnsafeToRepeat(value)) return this.unsafe(value, "function");
        throw this.refuse(
          "journal/unserializable",
          "is a function; the codec carries data, errors and handles only. Return data or a handle ([handle.serialize]); in a replayable run a callback may be wrapped in unsafeToRepeat(...)",
        );
      default:
        throw this.refuse(
          "journal/unserializable",
          `is a ${typeof value}; the codec carries data, errors and handles only. Use a string instead`,
        );
    }
  }

  private object(value: object): unknown {
    const ancestors = this.ancestors;
    if (ancestors.includes(value)) {
      const at = ancestors.indexOf(value);
      throw this.refuse(
        "journal/unserializable",
        `refers back to ${this.pathString(at)} (a cycle); the codec carries trees only. Break the cycle or pass an id instead`,
      );
    }
    if (ancestors.length >= this.maxDepth) {
      throw this.refuse(
        "journal/too-deep",
        `is nested deeper than ${this.maxDepth} levels; flatten the value or raise maxDepth`,
      );
    }
    const proto = Object.getPrototypeOf(value);
    if (proto === Array.prototype) return this.array(value as unknown[]);
    if (proto === Object.prototype || proto === null) {
      if (typeof (value as { [handle.serialize]?: unknown })[handle.serialize] === "function") {
        return this.handle(value);
      }
      return this.plain(value as Record<string, unknown>);
    }
    // Exact built-in prototypes first (identity checks are the cheapest dispatch); subclasses,
    // handles and values from other realms take the general path below.
    if (proto === Date.prototype) return this.date(value as Date);
    if (proto === Map.prototype) return this.map(value as Map<unknown, unknown>);
    if (proto === Set.prototype) return this.set(value as Set<unknown>);
    if (typeof (value as { [handle.serialize]?: unknown })[handle.serialize] === "function") {
      return this.handle(value);
    }
    if (value instanceof Error) return this.error(value);
    if (value instanceof Date) return this.date(value);
    if (value instanceof Map) return this.map(value);
    if (value instanceof Set) return this.set(value);
    if (value instanceof RegExp) {
      this.ann = [T_REGEXP];
      return `/${value.source}/${value.flags}`;
    }
    if (value instanceof URL) {
      this.ann = [T_URL];
      return value.href;
    }
    if (ArrayBuffer.isView(value)) {
      for (const [Ctor, name] of BINARY) {
        if (value instanceof Ctor) {
          this.ann = [[CUSTOM, C_BASE64 + name]];
          return toBase64(bytesOf(value));
        }
      }
    }
    if (value instanceof ArrayBuffer) {
      this.ann = [[CUSTOM, `${C_BASE64}ArrayBuffer`]];
      return toBase64(new Uint8Array(value));
    }
    if (Array.isArray(value)) return this.array(value);
    // An error from another realm fails `instanceof Error` but keeps its brand.
    if (Object.prototype.toString.call(value) === "[object Error]") return this.error(value);
    if (isUnsafeToRepeat(value)) return this.unsafe(value, kindName(value));
    throw this.refuse(
      "journal/unserializable",
      `is an instance of ${kindName(value)}, which is neither plain data nor a handle; convert it to plain data or implement [handle.serialize]()`,
    );
  }

  private date(value: Date): string {
    this.ann = [T_DATE];
    return Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString();
  }

  private error(value: object): unknown {
    this.ann = [[CUSTOM, C_ERROR]];
    return toErrorRecord(value);
  }

  private array(value: readonly unknown[]): unknown {
    const length = value.length;
    let out: unknown[] | undefined;
    let children: Children | undefined;
    const segments = this.segments;
    this.ancestors.push(value);
    const top = segments.push(0) - 1;
    for (let i = 0; i < length; i++) {
      segments[top] = i;
      const item = value[i];
      const next = this.walk(item);
      const ann = this.ann;
      if (ann !== undefined) children = addChild(children, String(i), ann);
      if (out !== undefined) out.push(next);
      else if (next !== item) {
        out = value.slice(0, i);
        out.push(next);
      }
    }
    segments.pop();
    this.ancestors.pop();
    this.ann = children;
    return out ?? value;
  }

  private plain(value: Record<string, unknown>): unknown {
    const keys = Object.keys(value);
    let out: Record<string, unknown> | undefined;
    let children: Children | undefined;
    const segments = this.segments;
    this.ancestors.push(value);
    const top = segments.push("") - 1;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      segments[top] = key;
      const item = value[key];
      const next = this.walk(item);
      const ann = this.ann;
      if (ann !== undefined) children = addChild(children, escapeKey(key), ann);
      if (out !== undefined) setOwn(out, key, next);
      else if (next !== item) {
        out = {};
        for (let j = 0; j < i; j++) setOwn(out, keys[j] as string, value[keys[j] as string]);
        setOwn(out, key, next);
      }
    }
    segments.pop();
    this.ancestors.pop();
    this.ann = children;
    return out ?? value;
  }

  private map(value: Map<unknown, unknown>): unknown {
    const out: unknown[] = [];
    let children: Children | undefined;
    const segments = this.segments;
    this.ancestors.push(value);
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
    this.ancestors.pop();
    this.ann = children === undefined ? [T_MAP] : [T_MAP, children];
    return out;
  }

  private set(value: Set<unknown>): unknown {
    const out: unknown[] = [];
    let children: Children | undefined;
    const segments = this.segments;
    this.ancestors.push(value);
    const top = segments.push("") - 1;
    let i = 0;
    for (const v of value) {
      segments[top] = new Step("element", i);
      out.push(this.walk(v));
      if (this.ann !== undefined) children = addChild(children, String(i), this.ann);
      i++;
    }
    segments.pop();
    this.ancestors.pop();
    this.ann = children === undefined ? [T_SET] : [T_SET, children];
    return out;
  }

  private handle(value: object): unknown {
    let record: unknown;
    try {
      record = (value as { [handle.serialize]: () => unknown })[handle.serialize]();
    } catch (cause) {
      throw this.refuse("journal/unserializable", "threw from its [handle.serialize]()", cause);
    }
    if (!isHandleRecord(record)) {
      throw this.refuse(
        "journal/unserializable",
        'is a handle whose [handle.serialize]() did not return { $handle: "<specifier>#<Kind>", value }; build the record with handleRecord(specifier, kind, value)',
      );
    }
    this.ancestors.push(value);
    const top = this.segments.push(new Step("handle", 0)) - 1;
    const inner = this.walk(record.value);
    const ann = this.ann;
    this.segments.length = top;
    this.ancestors.pop();
    if (ann === undefined) this.ann = [[CUSTOM, C_HANDLE]];
    else {
      this.ann = [[CUSTOM, C_HANDLE], addChild(undefined, "value", ann)];
    }
    return { $handle: record.$handle, value: inner };
  }

  private unsafe(value: unknown, kind: string): unknown {
    if (!this.allowUnsafe) {
      throw this.refuse(
        "journal/unserializable",
        `is a ${kind} marked unsafeToRepeat; it cannot be journaled. Record the call with outcome "unsafe" instead of encoding it`,
      );
    }
    void value;
    this.ann = [[CUSTOM, C_UNSAFE]];
    return { $unsafe: kind };
  }

  /** The path of the value being walked, or of the ancestor at `depth` when given. */
  pathString(depth = this.segments.length): string {
    return formatPath(this.label, this.segments, depth);
  }

  refuse(code: JournalErrorCode, reason: string, cause?: unknown): CodecError {
    const path = this.pathString();
    return new CodecError(code, path, `Cannot encode ${path}: it ${reason}.`, { cause });
  }
}

function kindName(value: object): string {
  const ctor = (value as { constructor?: { name?: unknown } }).constructor;
  if (typeof ctor === "function" && typeof ctor.name === "string" && ctor.name.length > 0)
    return ctor.name;
  return Object.prototype.toString.call(value).slice(8, -1);
}

/** Walks and stringifies; `options.maxBytes` is checked by the callers. */
function encodeText(value: unknown, options: EncodeOptions | undefined): string {
  const encoder = new Encoder(
    options?.path ?? "value",
    options?.maxDepth ?? DEFAULT_MAX_DEPTH,
    options?.allowUnsafe ?? false,
  );
  const tree = encoder.walk(value);
  const ann = encoder.ann;
  const json = JSON.stringify(tree);
  return ann === undefined
    ? `{"json":${json}}`
    : `{"json":${json},"meta":{"values":${JSON.stringify(ann)},"v":1}}`;
}

function sizeOf(text: string, options: EncodeOptions | undefined): number {
  const max = options?.maxBytes;
  // A UTF-16 code unit is 1 to 3 UTF-8 bytes, so the exact count is needed only in between.
  if (max !== undefined && text.length > max) tooLarge(text.length, max, options, true);
  const bytes = utf8ByteLength(text);
  if (max !== undefined && bytes > max) tooLarge(bytes, max, options, false);
  return bytes;
}

function tooLarge(
  bytes: number,
  max: number,
  options: EncodeOptions | undefined,
  atLeast: boolean,
): never {
  const path = options?.path ?? "value";
  throw new CodecError(
    "journal/too-large",
    path,
    `Cannot encode ${path}: its encoding is ${atLeast ? "at least " : ""}${bytes} bytes, over the limit of ${max}. Pass a smaller value (e.g. an id or a stream) or raise maxBytes.`,
  );
}

/**
 * Encodes a value to JSON text: JSON plus Date, Map, Set, BigInt, undefined, NaN/±Infinity/-0,
 * RegExp, URL, typed arrays/ArrayBuffer/DataView (base64), errors (as `{ "$error": … }` records)
 * and handles (as `{ "$handle": …, "value": … }` records, via `[handle.serialize]()`).
 * Plain objects are data, including ones shaped like records. Shared (non-cyclic) references are
 * written once per occurrence.
 * @throws CodecError `journal/unserializable` (function, symbol, cycle, class instance),
 *   `journal/too-deep`, `journal/too-large`; its `path` names the offending value, e.g. `args[0].when`.
 */
export function encode(value: unknown, options?: EncodeOptions): string {
  const text = encodeText(value, options);
  if (options?.maxBytes !== undefined) sizeOf(text, options);
  return text;
}

/**
 * Same checks as {@link encode}, returning the encoding's UTF-8 byte length (for limits).
 * @throws CodecError as {@link encode}.
 */
export function encodedSize(value: unknown, options?: EncodeOptions): number {
  return sizeOf(encodeText(value, options), options);
}
