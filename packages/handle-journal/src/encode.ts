import { utf8ByteLength } from "./codec-format";
import { Encoder } from "./encode-typed";
import { CodecError } from "./errors";

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
