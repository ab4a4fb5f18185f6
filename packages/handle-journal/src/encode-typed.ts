import { toBase64 } from "./base64";
import {
  BINARY_KINDS,
  C_BASE64,
  C_ERROR,
  C_HANDLE,
  C_UNSAFE,
  type Children,
  CUSTOM,
  T_BIGINT,
  T_DATE,
  T_MAP,
  T_NUMBER,
  T_REGEXP,
  T_SET,
  T_UNDEFINED,
  T_URL,
} from "./codec-format";
import { addChild } from "./encode-annotation";
import { Step } from "./encode-path";
import { JsonWalker } from "./encode-walk";
import { toErrorRecord } from "./error-record";
import { handle, isHandleRecord } from "./handle";
import { isUnsafeToRepeat } from "./unsafe";

/**
 * The encoder: the plain-JSON walk of {@link JsonWalker} plus every value JSON cannot carry,
 * each turned into JSON and typed by an annotation (see codec-format.ts), or refused.
 */
export class Encoder extends JsonWalker {
  constructor(
    label: string,
    maxDepth: number,
    private readonly allowUnsafe: boolean,
  ) {
    super(label, maxDepth);
  }

  protected special(value: unknown): unknown {
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

  protected instance(value: object, proto: unknown): unknown {
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
}

function kindName(value: object): string {
  const ctor = (value as { constructor?: { name?: unknown } }).constructor;
  if (typeof ctor === "function" && typeof ctor.name === "string" && ctor.name.length > 0)
    return ctor.name;
  return Object.prototype.toString.call(value).slice(8, -1);
}
