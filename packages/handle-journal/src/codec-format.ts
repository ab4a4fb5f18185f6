/**
 * The wire format of the codec, version 1 (see DESIGN.md, "Codec format"). It is the envelope and
 * annotation tree of superjson 2 (`meta.v: 1`), so the standard types read back with
 * `superjson.parse`; the types superjson has no rule for are `custom` annotations named `dk.*`.
 */

/** A type annotation: a built-in superjson name, or `["custom", name]`. */
export type TypeName = string | readonly [string, string];

/**
 * An annotation tree. A typed node is `[type]` or `[type, children]`; an untyped container with
 * annotated descendants is just `children`: escaped dotted paths (relative to the node) → trees.
 */
export type Annotation = readonly [TypeName] | readonly [TypeName, Children] | Children;
/** Escaped dotted path → annotation, relative to the annotated node. */
export type Children = { [path: string]: Annotation };

export const T_UNDEFINED = "undefined";
export const T_BIGINT = "bigint";
export const T_NUMBER = "number";
export const T_DATE = "Date";
export const T_REGEXP = "regexp";
export const T_SET = "set";
export const T_MAP = "map";
export const T_URL = "URL";
export const CUSTOM = "custom";
/** An Error, carried as an error record `{ "$error": … }`. */
export const C_ERROR = "dk.error";
/** An object handle, carried as a handle record `{ "$handle": …, "value": … }`. */
export const C_HANDLE = "dk.handle";
/** A value marked unsafeToRepeat, carried as `{ "$unsafe": "<kind>" }`. */
export const C_UNSAFE = "dk.unsafe";
/** Prefix of binary types: `dk.base64:Uint8Array`, `dk.base64:ArrayBuffer`, … */
export const C_BASE64 = "dk.base64:";

/**
 * The binary views carried as `dk.base64:<name>`, with their constructors, in the order the
 * encoder tests `instanceof` (an ArrayBuffer is `dk.base64:ArrayBuffer`).
 */
export const BINARY_KINDS: ReadonlyArray<
  readonly [abstract new (...args: never[]) => ArrayBufferView, string]
> = [
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

/** The superjson meta version this format writes and reads. */
export const META_VERSION = 1;

/** Escapes a key for a dotted annotation path, as superjson does (`\` → `\\`, `.` → `\.`). */
export function escapeKey(key: string): string {
  return key.indexOf("\\") === -1 && key.indexOf(".") === -1
    ? key
    : key.replace(/\\/g, "\\\\").replace(/\./g, "\\.");
}

/** Splits an escaped dotted path into keys; `undefined` for a malformed escape. */
export function parsePath(path: string): string[] | undefined {
  if (path.indexOf("\\") === -1) return path.split(".");
  const out: string[] = [];
  let segment = "";
  for (let i = 0; i < path.length; i++) {
    const ch = path[i];
    if (ch === "\\") {
      const next = path[i + 1];
      if (next !== "\\" && next !== ".") return undefined;
      segment += next;
      i++;
    } else if (ch === ".") {
      out.push(segment);
      segment = "";
    } else {
      segment += ch;
    }
  }
  out.push(segment);
  return out;
}
