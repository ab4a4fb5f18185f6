import { fromBase64 } from "./base64";
import {
  type Annotation,
  BINARY_KINDS,
  C_BASE64,
  C_ERROR,
  C_HANDLE,
  C_UNSAFE,
  type Children,
  CUSTOM,
  META_VERSION,
  parsePath,
  T_BIGINT,
  T_DATE,
  T_MAP,
  T_NUMBER,
  T_REGEXP,
  T_SET,
  T_UNDEFINED,
  T_URL,
  type TypeName,
} from "./codec-format";
import { fromErrorRecord, isErrorRecord } from "./error-record";
import { CodecError, type JournalErrorCode } from "./errors";
import { type HandleRecord, isHandleRecord } from "./handle";

/** Options of {@link decode}. */
export interface JournalDecodeOptions {
  /** Turns a handle record into a live object; required only if the text contains handles. */
  revive?: (record: HandleRecord) => unknown;
  /**
   * What an `{ "$unsafe": kind }` record (see `JournalEncodeOptions.allowUnsafe`) decodes to. Default:
   * decoding fails with `journal/unsafe-to-repeat`, since the value cannot be brought back.
   */
  unsafe?: (record: { $unsafe: string }, path: string) => unknown;
  /** Label of the root in error paths. Default "value". */
  path?: string;
}

type BinaryCtor = new (buffer: ArrayBuffer, byteOffset: number, length: number) => ArrayBufferView;

/** Typed-array constructors by wire name (DataView and ArrayBuffer are decoded on their own). */
const BINARY: Readonly<Record<string, BinaryCtor>> = Object.fromEntries(
  BINARY_KINDS.filter(([, name]) => name !== "DataView").map(([Ctor, name]) => [name, Ctor]),
) as unknown as Record<string, BinaryCtor>;

function corrupt(path: string, reason: string, cause?: unknown): CodecError {
  return new CodecError(
    "journal/corrupt",
    path,
    `Cannot decode ${path}: ${reason}. The text was not written by encode() or was altered; it cannot be read back.`,
    { cause },
  );
}

function fail(code: JournalErrorCode, path: string, message: string): CodecError {
  return new CodecError(code, path, message);
}

function isContainer(node: unknown): node is Record<string, unknown> | unknown[] {
  return typeof node === "object" && node !== null;
}

class Decoder {
  constructor(private readonly options: JournalDecodeOptions | undefined) {}

  apply(node: unknown, tree: unknown, path: string): unknown {
    if (Array.isArray(tree)) {
      const children = tree[1];
      if (children !== undefined) node = this.children(node, children, path);
      return this.untransform(tree[0], node, path);
    }
    if (isContainer(tree)) return this.children(node, tree as Children, path);
    throw corrupt(path, "an annotation is neither a type nor a set of paths");
  }

  /** Applies child annotations in place; only annotated paths are visited. */
  private children(node: unknown, children: unknown, path: string): unknown {
    if (!isContainer(children) || Array.isArray(children))
      throw corrupt(path, "malformed annotation children");
    for (const key of Object.keys(children)) {
      const keys = parsePath(key);
      if (keys === undefined) throw corrupt(path, `malformed annotation path "${key}"`);
      let parent: unknown = node;
      const last = keys.length - 1;
      for (let i = 0; i < last; i++) parent = this.child(parent, keys[i] as string, path, key);
      const leaf = keys[last] as string;
      const at = `${path}.${key}`;
      const next = this.apply(this.child(parent, leaf, path, key), (children as Children)[key], at);
      if (Array.isArray(parent)) parent[Number(leaf)] = next;
      else if (leaf === "__proto__") {
        Object.defineProperty(parent, leaf, {
          value: next,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else (parent as Record<string, unknown>)[leaf] = next;
    }
    return node;
  }

  /** An own child of a JSON container; never reads through a prototype. */
  private child(parent: unknown, key: string, path: string, full: string): unknown {
    if (Array.isArray(parent)) {
      const index = Number(key);
      if (Number.isInteger(index) && index >= 0 && index < parent.length && String(index) === key) {
        return parent[index];
      }
    } else if (isContainer(parent) && Object.hasOwn(parent, key)) {
      return (parent as Record<string, unknown>)[key];
    }
    throw corrupt(path, `annotation path "${full}" does not exist in the value`);
  }

  private untransform(type: TypeName | unknown, value: unknown, path: string): unknown {
    if (typeof type === "string") {
      switch (type) {
        case T_UNDEFINED:
          return undefined;
        case T_BIGINT:
          if (typeof value === "string") {
            try {
              return BigInt(value);
            } catch (cause) {
              throw corrupt(path, "a bigint is not an integer", cause);
            }
          }
          break;
        case T_NUMBER:
          if (typeof value === "string") return Number(value);
          break;
        case T_DATE:
          if (typeof value === "string") return new Date(value);
          break;
        case T_REGEXP:
          if (typeof value === "string") {
            const slash = value.lastIndexOf("/");
            try {
              return new RegExp(value.slice(1, slash), value.slice(slash + 1));
            } catch (cause) {
              throw corrupt(path, "a regexp does not compile", cause);
            }
          }
          break;
        case T_SET:
          if (Array.isArray(value)) return new Set(value);
          break;
        case T_MAP:
          if (Array.isArray(value) && value.every((e) => Array.isArray(e) && e.length === 2)) {
            return new Map(value as [unknown, unknown][]);
          }
          break;
        case T_URL:
          if (typeof value === "string") {
            try {
              return new URL(value);
            } catch (cause) {
              throw corrupt(path, "a URL does not parse", cause);
            }
          }
          break;
        default:
          throw corrupt(path, `unknown type "${type}"`);
      }
      throw corrupt(path, `a ${type} has the wrong JSON shape`);
    }
    if (!Array.isArray(type) || type[0] !== CUSTOM || typeof type[1] !== "string") {
      throw corrupt(path, `unknown type ${JSON.stringify(type)}`);
    }
    const name = type[1] as string;
    if (name === C_ERROR) {
      if (!isErrorRecord(value)) throw corrupt(path, "an error record has the wrong shape");
      return fromErrorRecord(value);
    }
    if (name === C_HANDLE) {
      if (!isHandleRecord(value)) throw corrupt(path, "a handle record has the wrong shape");
      const revive = this.options?.revive;
      if (revive === undefined) {
        throw fail(
          "journal/no-reviver",
          path,
          `Cannot decode ${path}: it is a handle (${value.$handle}) and no revive function was given. Pass decode(text, { revive }) (e.g. createReviver(modules)).`,
        );
      }
      return revive(value);
    }
    if (name === C_UNSAFE) {
      const record = value as { $unsafe: string };
      if (!isContainer(value) || typeof record.$unsafe !== "string")
        throw corrupt(path, "an unsafe record has the wrong shape");
      const unsafe = this.options?.unsafe;
      if (unsafe !== undefined) return unsafe(record, path);
      throw fail(
        "journal/unsafe-to-repeat",
        path,
        `Cannot decode ${path}: it was a ${record.$unsafe} marked unsafeToRepeat, which cannot be brought back on replay. The run must fail or start a new execution.`,
      );
    }
    if (name.startsWith(C_BASE64) && typeof value === "string") {
      const kind = name.slice(C_BASE64.length);
      let bytes: Uint8Array;
      try {
        bytes = fromBase64(value);
      } catch (cause) {
        throw corrupt(path, "binary data is not base64", cause);
      }
      // fromBase64 returns a fresh buffer at offset 0, so every element size is aligned.
      const buffer = bytes.buffer as ArrayBuffer;
      if (kind === "ArrayBuffer") return buffer;
      if (kind === "DataView") return new DataView(buffer);
      const Ctor = Object.hasOwn(BINARY, kind) ? BINARY[kind] : undefined;
      const size = (Ctor as unknown as { BYTES_PER_ELEMENT?: number } | undefined)
        ?.BYTES_PER_ELEMENT;
      if (Ctor !== undefined && size !== undefined && bytes.byteLength % size === 0) {
        return new Ctor(buffer, 0, bytes.byteLength / size);
      }
    }
    throw corrupt(path, `unknown type ${JSON.stringify(type)}`);
  }
}

/**
 * Decodes text written by {@link encode} back to the value: the same types, errors rebuilt by
 * `fromErrorRecord`, handles passed to `options.revive`. Keys such as `__proto__` and
 * `constructor` come back as own data properties and never touch a prototype.
 * @throws CodecError `journal/corrupt` for text encode did not write; `journal/no-reviver` for a
 *   handle without `revive`; `journal/unsafe-to-repeat` for an unsafe record without `unsafe`.
 */
export function decode(text: string, options?: JournalDecodeOptions): unknown {
  const path = options?.path ?? "value";
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch (cause) {
    throw corrupt(path, "the text is not JSON", cause);
  }
  if (!isContainer(payload) || Array.isArray(payload) || !Object.hasOwn(payload, "json")) {
    throw corrupt(path, 'the text is not an encoding (no "json" member)');
  }
  const { json, meta } = payload as { json: unknown; meta?: unknown };
  if (meta === undefined) return json;
  if (!isContainer(meta) || (meta as { v?: unknown }).v !== META_VERSION) {
    throw corrupt(path, `the encoding's meta is not version ${META_VERSION}`);
  }
  if ((meta as { referentialEqualities?: unknown }).referentialEqualities !== undefined) {
    throw corrupt(path, "the encoding uses shared references, which this codec never writes");
  }
  const values = (meta as { values?: Annotation }).values;
  if (values === undefined) return json;
  return new Decoder(options).apply(json, values, path);
}
