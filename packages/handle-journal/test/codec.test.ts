import fc from "fast-check";
import superjson from "superjson";
import { describe, expect, it } from "vitest";
import {
  CodecError,
  createReviver,
  decode,
  encode,
  encodedSize,
  handle,
  handleKindOf,
  handleRecord,
  JournalError,
  unsafeToRepeat,
} from "../src/index";
import { containers, scalars, value } from "./arbitraries";
import { difference } from "./same-value";

const RUNS = 10_000;

function roundTrips(v: unknown): boolean {
  const back = decode(encode(v));
  const diff = difference(v, back);
  if (diff !== undefined) throw new Error(`round trip changed ${diff}`);
  return true;
}

describe("encode ∘ decode", () => {
  for (const [name, arbitrary] of Object.entries(scalars)) {
    it(`is the identity on ${RUNS.toLocaleString("en")} generated ${name} values, alone and inside containers`, () => {
      fc.assert(
        fc.property(
          arbitrary,
          (v) => roundTrips(v) && roundTrips([v]) && roundTrips({ k: v, "x.y": [v] }),
        ),
        { numRuns: RUNS },
      );
    });
  }

  for (const [name, arbitrary] of Object.entries(containers)) {
    it(`is the identity on ${RUNS.toLocaleString("en")} generated ${name}s holding values of every type`, () => {
      fc.assert(fc.property(arbitrary, roundTrips), { numRuns: RUNS });
    });
  }

  it(`is the identity on ${RUNS.toLocaleString("en")} generated nested values mixing every type`, () => {
    fc.assert(fc.property(value, roundTrips), { numRuns: RUNS });
  });

  it("writes plain JSON data unchanged inside the envelope, with no annotations", () => {
    const data = { a: [1, "two", null, true, { b: 2.5 }] };
    expect(encode(data)).toBe(`{"json":${JSON.stringify(data)}}`);
  });

  it("writes a short flat array of JSON primitives (a call's usual arguments) exactly as the same array nested in an object", () => {
    const item = fc.oneof(
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      fc.double(),
      fc.integer(),
      fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, undefined, 1n),
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 20 }), (list) => {
        // Nested, the array always takes the general walk; at the top it may take the shortcut.
        const nested = encode({ a: list });
        const top = encode(list);
        if (nested.includes('"meta"')) expect(top).toContain('"meta"');
        else expect(top).toBe(`{"json":${nested.slice('{"json":{"a":'.length, -2)}}`);
        return roundTrips(list);
      }),
      { numRuns: RUNS },
    );
  });

  it("writes the superjson format, so superjson reads the standard types back", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          scalars.date,
          scalars.bigint,
          scalars.number,
          scalars.undefined,
          scalars.regexp,
          scalars.url,
        ),
        (v) => {
          const input = { v, m: new Map([["k", v]]), s: new Set([v]) };
          const back = superjson.parse(encode(input));
          return difference(input, back) === undefined;
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("keeps __proto__ and constructor keys as own data and never touches a prototype", () => {
    const input = JSON.parse(
      '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}},"a":{"__proto__":{"b":1}}}',
    );
    // An own property named __proto__ holds a Date to annotate.
    const own = Object.getOwnPropertyDescriptor(input.a, "__proto__")?.value as Record<
      string,
      unknown
    >;
    own.when = new Date(7);
    const text = encode(input);
    const back = decode(text) as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.hasOwn(back, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const backOwn = Object.getOwnPropertyDescriptor(back.a, "__proto__")?.value;
    expect(backOwn.when).toEqual(new Date(7));
    // A hand-made annotation pointing through a missing __proto__ is refused, not followed.
    const forged =
      '{"json":{"a":{}},"meta":{"values":{"a.__proto__.polluted":["undefined"]},"v":1}}';
    expect(() => decode(forged)).toThrow(CodecError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("leaves record-shaped plain objects as plain data", () => {
    const data = { $error: { name: "E", message: "m" }, other: { $handle: "m#K", value: 1 } };
    expect(decode(encode(data))).toEqual(data);
  });

  it("writes an Error anywhere as an error record and rebuilds the built-in class", () => {
    const text = encode({
      failed: Object.assign(new RangeError("too far"), { code: "x/far", retryable: true }),
    });
    expect(JSON.parse(text).json.failed).toEqual({
      $error: { name: "RangeError", message: "too far", code: "x/far", retryable: true },
    });
    const back = (decode(text) as { failed: RangeError & { code: string } }).failed;
    expect(back).toBeInstanceOf(RangeError);
    expect(back.code).toBe("x/far");
  });

  it("encodes binary data as base64", () => {
    const text = encode(new Uint8Array([104, 105]));
    expect(JSON.parse(text).json).toBe("aGk=");
  });

  it("reports the UTF-8 size of the encoding and refuses encodings over maxValueBytes", () => {
    const v = { s: "é€😀" };
    const bytes = new TextEncoder().encode(encode(v)).byteLength;
    expect(encodedSize(v)).toBe(bytes);
    expect(encode(v, { maxValueBytes: bytes })).toBe(encode(v));
    const err = catchError(() => encode(v, { maxValueBytes: bytes - 1, path: "result" }));
    expect(err.code).toBe("journal/too-large");
    expect(err.path).toBe("result");
    expect(() => encodedSize(v, { maxValueBytes: bytes - 1 })).toThrow(/over the limit/);
  });
});

describe("handles", () => {
  class Run {
    constructor(
      readonly id: string,
      readonly started: Date,
    ) {}
    [handle.serialize]() {
      return { id: this.id, started: this.started };
    }
  }
  const handleKind = () => "codemode:jobs#Run";

  it("writes a handle as a record of its own JSON under the kind handleKind names, and passes it to revive on decode", () => {
    const text = encode({ run: new Run("r1", new Date(3)) }, { handleKind });
    expect(JSON.parse(text).json.run).toEqual({
      $handle: "codemode:jobs#Run",
      value: { id: "r1", started: new Date(3).toISOString() },
    });
    const seen: unknown[] = [];
    const back = decode(text, {
      revive: (record) => {
        seen.push(record);
        const v = record.value as { id: string; started: Date };
        return new Run(v.id, v.started);
      },
    }) as { run: Run };
    expect(back.run).toBeInstanceOf(Run);
    expect(back.run.started).toEqual(new Date(3));
    expect(seen).toEqual([
      { $handle: "codemode:jobs#Run", value: { id: "r1", started: new Date(3) } },
    ]);
  });

  it("refuses to decode a handle without a revive function", () => {
    const err = catchError(() => decode(encode([new Run("r1", new Date(0))], { handleKind })));
    expect(err.code).toBe("journal/no-reviver");
    expect(err.message).toMatch(/codemode:jobs#Run/);
  });

  it("refuses a handle when nothing names its module and kind, or handleKind gives a malformed kind", () => {
    const own = { [handle.serialize]: () => ({ id: 1 }) };
    const unnamed = catchError(() => encode({ x: own }));
    expect(unnamed.code).toBe("journal/unserializable");
    expect(unnamed.path).toBe("value.x");
    expect(unnamed.message).toMatch(/handleKind/);
    const malformed = catchError(() => encode({ x: own }, { handleKind: () => "Run" }));
    expect(malformed.code).toBe("journal/unserializable");
    expect(malformed.message).toMatch(/"Run", not "<specifier>#<Kind>"/);
    const throwing = catchError(() =>
      encode(own, {
        handleKind: () => {
          throw new Error("no");
        },
      }),
    );
    expect(throwing.code).toBe("journal/unserializable");
  });
});

describe("createReviver", () => {
  class JobRun {
    constructor(readonly id: string) {}
    [handle.serialize]() {
      return { id: this.id };
    }
  }
  class DeployRun {
    constructor(readonly id: string) {}
    [handle.serialize]() {
      return { id: this.id };
    }
  }
  // The bridge knows which module made each handle; here the class says it.
  const handleKind = (h: object) =>
    handleRecord(h instanceof JobRun ? "codemode:jobs" : "codemode:deploy", "Run", null).$handle;
  const jobs = { [handle.revive]: { Run: (v: unknown) => new JobRun((v as { id: string }).id) } };
  const deploy = {
    [handle.revive]: { Run: (v: unknown) => new DeployRun((v as { id: string }).id) },
  };

  it("revives each kind through the module that named it, so two modules may both have a Run", () => {
    const revive = createReviver({ "codemode:jobs": jobs, "codemode:deploy": deploy });
    const back = decode(encode([new JobRun("a"), new DeployRun("b")], { handleKind }), {
      revive,
    }) as unknown[];
    expect(back[0]).toBeInstanceOf(JobRun);
    expect(back[1]).toBeInstanceOf(DeployRun);
    expect((back[1] as DeployRun).id).toBe("b");
  });

  it("refuses an unknown module, a module without a revive map and an unknown kind, clearly", () => {
    const text = encode(new JobRun("a"), { handleKind });
    const attempt = (modules: Parameters<typeof createReviver>[0]) => {
      try {
        decode(text, { revive: createReviver(modules) });
      } catch (error) {
        expect(error).toBeInstanceOf(JournalError);
        expect((error as JournalError).code).toBe("journal/no-reviver");
        return (error as Error).message;
      }
      throw new Error("expected a refusal");
    };
    expect(attempt({ "codemode:deploy": deploy })).toMatch(
      /module "codemode:jobs" is not among the modules/,
    );
    expect(attempt({ "codemode:jobs": {} })).toMatch(/declares no \[handle.revive\] map/);
    expect(attempt({ "codemode:jobs": { [handle.revive]: { Job: () => ({}) } } })).toMatch(
      /no reviver for kind "Run" \(it has: Job\)/,
    );
  });
});

describe("subclasses of built-ins", () => {
  it("encode like their base type", () => {
    class Stamp extends Date {}
    class Registry extends Map<string, number> {}
    const back = decode(encode({ at: new Stamp(5), reg: new Registry([["a", 1]]) })) as {
      at: Date;
      reg: Map<string, number>;
    };
    expect(back.at).toEqual(new Date(5));
    expect(back.reg.get("a")).toBe(1);
  });
});

describe("unsafeToRepeat values", () => {
  it("are refused by default and carried as $unsafe records when allowed", () => {
    const fn = unsafeToRepeat(() => 1);
    expect(catchError(() => encode({ cb: fn })).message).toMatch(/unsafeToRepeat/);
    const text = encode({ cb: fn }, { allowUnsafe: true });
    expect(JSON.parse(text).json.cb).toEqual({ $unsafe: "function" });
    const err = catchError(() => decode(text));
    expect(err.code).toBe("journal/unsafe-to-repeat");
    expect(err.path).toBe("value.cb");
    expect(decode(text, { unsafe: () => "stub" })).toEqual({ cb: "stub" });
  });
});

function catchError(fn: () => unknown): CodecError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CodecError);
    return error as CodecError;
  }
  throw new Error("expected a CodecError");
}

describe("handleKindOf", () => {
  it("reads a handle's kind from its class's static [handle.kind], never from its constructor name", () => {
    // As a minifier leaves it: the class is named "a", its declared kind is "Run".
    const a = class {
      static [handle.kind] = "Run";
      readonly id = "r1";
    };
    class Sub extends a {}
    class Own {
      get [handle.kind]() {
        return "Job";
      }
    }
    class Run {}
    expect(new a().constructor.name).toBe("a");
    expect(handleKindOf(new a())).toBe("Run");
    expect(handleKindOf(new Sub())).toBe("Run");
    expect(handleKindOf(new Own())).toBe("Job");
    expect(handleKindOf(new Run())).toBeNull();
    const malformed = class {
      static [handle.kind] = "a#b";
      readonly id = "m1";
    };
    expect(handleKindOf(new malformed())).toBeNull();
    const throwing = {
      get [handle.kind](): string {
        throw new Error("boom");
      },
    };
    expect(handleKindOf(throwing)).toBeNull();
  });
});
