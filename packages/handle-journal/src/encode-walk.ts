import { type Annotation, type Children, escapeKey } from "./codec-format";
import { addChild } from "./encode-annotation";
import { formatPath, type Segment } from "./encode-path";
import { CodecError, type JournalErrorCode } from "./errors";
import { handle } from "./handle";
import { defineOwn } from "./own-property";

/**
 * The walk over plain JSON (strings, booleans, finite numbers, null, arrays, plain objects) that
 * validates and transforms in one pass, copying a container only when something inside it
 * changes, so plain JSON data is walked once and stringified once. Everything else goes to the
 * subclass's {@link JsonWalker.special} and {@link JsonWalker.instance}, which type it.
 */
export abstract class JsonWalker {
  /** The annotation of the value the last `walk` returned. */
  ann: Annotation | undefined = undefined;
  /** The containers being walked, root first (for cycle detection and depth). */
  protected readonly ancestors: object[] = [];
  /** The path steps to the value being walked, root first. */
  protected readonly segments: Segment[] = [];

  constructor(
    private readonly label: string,
    private readonly maxDepth: number,
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
          return this.special(value);
        }
        if (Number.isFinite(value)) {
          this.ann = undefined;
          return value;
        }
        return this.special(value);
      case "object":
        if (value === null) {
          this.ann = undefined;
          return null;
        }
        return this.object(value);
      default:
        return this.special(value);
    }
  }

  /** A primitive JSON cannot carry (-0, NaN, ±Infinity, undefined, bigint, symbol) or a function. */
  protected abstract special(value: unknown): unknown;

  /** An object that is neither an array nor a plain object, or one that is a handle. */
  protected abstract instance(value: object, proto: unknown): unknown;

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
    if (
      (proto === Object.prototype || proto === null) &&
      typeof (value as { [handle.serialize]?: unknown })[handle.serialize] !== "function"
    ) {
      return this.plain(value as Record<string, unknown>);
    }
    return this.instance(value, proto);
  }

  protected array(value: readonly unknown[]): unknown {
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
      if (out !== undefined) defineOwn(out, key, next);
      else if (next !== item) {
        out = {};
        for (let j = 0; j < i; j++) defineOwn(out, keys[j] as string, value[keys[j] as string]);
        defineOwn(out, key, next);
      }
    }
    segments.pop();
    this.ancestors.pop();
    this.ann = children;
    return out ?? value;
  }

  /** The path of the value being walked, or of the ancestor at `depth` when given. */
  pathString(depth = this.segments.length): string {
    return formatPath(this.label, this.segments, depth);
  }

  /** The error refusing the value being walked; `reason` completes "Cannot encode <path>: it …". */
  refuse(code: JournalErrorCode, reason: string, cause?: unknown): CodecError {
    const path = this.pathString();
    return new CodecError(code, path, `Cannot encode ${path}: it ${reason}.`, { cause });
  }
}
