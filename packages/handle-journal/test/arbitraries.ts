import fc from "fast-check";

const ERROR_CLASSES = [
  Error,
  TypeError,
  RangeError,
  SyntaxError,
  ReferenceError,
  EvalError,
  URIError,
] as const;

/** Plain JSON with -0 normalised away (JSON itself has no -0). */
export const jsonProp = fc
  .jsonValue({ maxDepth: 2 })
  .map((v) => JSON.parse(JSON.stringify(v)) as unknown);

/** Keys that stress escaping and prototype handling. */
export const key = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 8 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "__proto__",
      "constructor",
      "prototype",
      "a.b",
      "\\",
      "a\\.b",
      ".",
      "",
      "0",
      "$error",
      "$handle",
      "json",
      "meta",
    ),
  },
);

const propName = fc
  .string({ minLength: 1, maxLength: 8 })
  .filter((k) => !["name", "message", "stack", "cause", "errors"].includes(k));

/** An Error of a built-in class or a custom name, with JSON props such as `code` and `retryable`. */
export const error = fc
  .record({
    cls: fc.constantFrom(...ERROR_CLASSES),
    name: fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: undefined }),
    message: fc.string({ maxLength: 20 }),
    code: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
    retryable: fc.option(fc.boolean(), { nil: undefined }),
    props: fc.dictionary(propName, jsonProp, { maxKeys: 3 }),
  })
  .map(({ cls, name, message, code, retryable, props }) => {
    const e = new cls(message);
    if (name !== undefined) e.name = name;
    for (const [k, v] of Object.entries(props))
      Object.defineProperty(e, k, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    if (code !== undefined) Object.assign(e, { code });
    if (retryable !== undefined) Object.assign(e, { retryable });
    return e;
  });

const regexp = fc
  .record({
    source: fc.stringMatching(/^[a-z0-9.*+?|()[\]\\/^$]{0,10}$/),
    flags: fc.subarray(["d", "g", "i", "m", "s", "u", "y"]),
  })
  .map(({ source, flags }) => {
    try {
      return new RegExp(source, flags.join(""));
    } catch {
      return new RegExp("x", flags.join(""));
    }
  });

const binary = fc.oneof(
  fc.uint8Array({ maxLength: 20 }),
  fc.int8Array({ maxLength: 10 }),
  fc.uint8ClampedArray({ maxLength: 10 }),
  fc.int16Array({ maxLength: 10 }),
  fc.uint16Array({ maxLength: 10 }),
  fc.int32Array({ maxLength: 10 }),
  fc.uint32Array({ maxLength: 10 }),
  fc.float32Array({ maxLength: 10 }),
  fc.float64Array({ maxLength: 10 }),
  fc.bigInt64Array({ maxLength: 5 }),
  fc.bigUint64Array({ maxLength: 5 }),
  fc.uint8Array({ maxLength: 16 }).map((b) => b.slice().buffer as ArrayBuffer),
  fc.uint8Array({ maxLength: 16 }).map((b) => new DataView(b.slice().buffer)),
  // A view into the middle of a larger buffer.
  fc
    .uint8Array({ minLength: 4, maxLength: 16 })
    .map((b) => new Uint8Array(b.buffer, 1, b.length - 2)),
);

/** Every scalar-like type the codec carries, by name. */
export const scalars = {
  string: fc.string({ unit: "binary", maxLength: 20 }),
  number: fc.double(),
  integer: fc.integer(),
  boolean: fc.boolean(),
  null: fc.constant(null),
  undefined: fc.constant(undefined),
  bigint: fc.bigInt(),
  date: fc.date({ noInvalidDate: false }),
  regexp,
  url: fc.webUrl({ withQueryParameters: true, withFragments: true }).map((u) => new URL(u)),
  binary,
  error,
} as const;

const scalar = fc.oneof(...Object.values(scalars));

/** Nested values of every supported type: arrays, plain objects, Maps and Sets of anything. */
export const value: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    { weight: 4, arbitrary: scalar },
    { weight: 1, arbitrary: fc.array(tie("node"), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.sparseArray(tie("node"), { maxLength: 4 }) },
    {
      weight: 1,
      arbitrary: fc.array(fc.tuple(key, tie("node")), { maxLength: 4 }).map((entries) => {
        const o: Record<string, unknown> = {};
        for (const [k, v] of entries)
          Object.defineProperty(o, k, {
            value: v,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        return o;
      }),
    },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.tuple(tie("node"), tie("node")), { maxLength: 3 })
        .map((e) => new Map(e)),
    },
    { weight: 1, arbitrary: fc.array(tie("node"), { maxLength: 3 }).map((e) => new Set(e)) },
  ),
})).node;

/** Each container type, holding values of every type. */
export const containers = {
  array: fc.array(value, { maxLength: 4 }),
  "plain object": fc.dictionary(key, value, { maxKeys: 4 }).map((o) => {
    // Plain objects with an ordinary prototype, keys such as __proto__ kept as own data.
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(o)) {
      Object.defineProperty(out, k, {
        value: o[k],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }),
  Map: fc.array(fc.tuple(value, value), { maxLength: 4 }).map((entries) => new Map(entries)),
  Set: fc.array(value, { maxLength: 4 }).map((items) => new Set(items)),
} as const;
