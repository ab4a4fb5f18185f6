import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CodecError, encode, encodedSize } from "../src/index";
import { scalars } from "./arbitraries";

class Point {
  constructor(readonly x: number) {}
}

type Poison = { name: string; make: () => unknown; code: string; cycle?: boolean };

/** Values the codec must refuse, each with the code it refuses them with. */
const POISONS: Poison[] = [
  { name: "function", make: () => () => 1, code: "journal/unserializable" },
  { name: "async function", make: () => async () => 1, code: "journal/unserializable" },
  { name: "class", make: () => Point, code: "journal/unserializable" },
  { name: "symbol", make: () => Symbol("s"), code: "journal/unserializable" },
  { name: "class instance", make: () => new Point(1), code: "journal/unserializable" },
  { name: "promise", make: () => Promise.resolve(1), code: "journal/unserializable" },
  { name: "WeakMap", make: () => new WeakMap(), code: "journal/unserializable" },
  { name: "ReadableStream", make: () => new ReadableStream(), code: "journal/unserializable" },
  { name: "boxed string", make: () => new String("s"), code: "journal/unserializable" },
  { name: "cycle", make: () => undefined, code: "journal/unserializable", cycle: true },
];

type Step = { kind: "key"; key: string } | { kind: "index"; index: number; length: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.string({ maxLength: 6 }).map((key) => ({ kind: "key" as const, key })),
  fc
    .integer({ min: 1, max: 4 })
    .chain((length) =>
      fc
        .integer({ min: 0, max: length - 1 })
        .map((index) => ({ kind: "index" as const, index, length })),
    ),
);

function pathOf(label: string, steps: Step[]): string {
  let path = label;
  for (const s of steps) {
    if (s.kind === "index") path += `[${s.index}]`;
    else
      path += /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s.key) ? `.${s.key}` : `[${JSON.stringify(s.key)}]`;
  }
  return path;
}

/** Nests `leaf` at `steps`, with valid siblings of other types around it. */
function build(steps: Step[], leaf: (root: unknown) => unknown, sibling: unknown): unknown {
  let root: unknown;
  const holder: { set?: (v: unknown) => void } = {};
  let current: unknown;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i] as Step;
    let container: unknown;
    let put: (v: unknown) => void;
    if (s.kind === "index") {
      const arr = Array.from({ length: s.length }, () => sibling);
      container = arr;
      put = (v) => {
        arr[s.index] = v;
      };
    } else {
      const obj: Record<string, unknown> = { sibling };
      Object.defineProperty(obj, s.key, {
        value: null,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      container = obj;
      put = (v) => {
        Object.defineProperty(obj, s.key, {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      };
    }
    if (i === 0) root = container;
    else holder.set?.(container);
    holder.set = put;
    current = container;
  }
  void current;
  if (steps.length === 0) return leaf(undefined);
  holder.set?.(leaf(root));
  return root;
}

describe("refused values", () => {
  for (const poison of POISONS) {
    it(`refuses a ${poison.name} at any generated path and names that path`, () => {
      fc.assert(
        fc.property(
          fc.array(step, { minLength: poison.cycle ? 1 : 0, maxLength: 6 }),
          scalars.date,
          (steps, sibling) => {
            const label = "args";
            const v = build(steps, (root) => (poison.cycle ? root : poison.make()), sibling);
            let error: unknown;
            try {
              encode(v, { path: label });
            } catch (e) {
              error = e;
            }
            expect(error).toBeInstanceOf(CodecError);
            const codecError = error as CodecError;
            expect(codecError.code).toBe(poison.code);
            expect(codecError.path).toBe(pathOf(label, steps));
            expect(codecError.message).toContain(pathOf(label, steps));
            expect(codecError.retryable).toBe(false);
            // encodedSize makes the same checks.
            expect(() => encodedSize(v, { path: label })).toThrow(CodecError);
            return true;
          },
        ),
        { numRuns: 1000 },
      );
    });
  }

  it("names the ancestor a cycle refers back to", () => {
    const a: Record<string, unknown> = { list: [] };
    (a.list as unknown[]).push({ back: a });
    expect(() => encode({ a }, { path: "args" })).toThrow("refers back to args.a");
  });

  it("accepts the same object twice when it is shared but not cyclic", () => {
    const shared = { n: 1 };
    expect(JSON.parse(encode([shared, shared])).json).toEqual([{ n: 1 }, { n: 1 }]);
  });

  it("refuses nesting deeper than maxDepth with the path where it went too deep", () => {
    let v: unknown = 1;
    for (let i = 0; i < 5; i++) v = { d: v };
    expect(() => encode(v, { maxDepth: 5 })).not.toThrow();
    let error: CodecError | undefined;
    try {
      encode({ d: v }, { maxDepth: 5 });
    } catch (e) {
      error = e as CodecError;
    }
    expect(error?.code).toBe("journal/too-deep");
    expect(error?.path).toBe("value.d.d.d.d.d");
  });

  it("refuses a hostile 10,000-level nesting without overflowing the stack", () => {
    let v: unknown = 1;
    for (let i = 0; i < 10_000; i++) v = [v];
    expect(() => encode(v)).toThrow(/nested deeper than 100 levels/);
  });

  it("names the Map entry and the Set element holding a refused value", () => {
    expect(() => encode({ m: new Map([["k", () => 1]]) })).toThrow('value.m.get("k")');
    expect(() => encode({ m: new Map([[() => 1, 1]]) })).toThrow("value.m.keys()[0]");
    expect(() => encode({ s: new Set([1, Symbol("x")]) })).toThrow("value.s.values()[1]");
  });
});
