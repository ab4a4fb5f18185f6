import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decode,
  encode,
  fromErrorRecord,
  isErrorRecord,
  type JournalErrorRecord,
  toErrorRecord,
} from "../src/index";
import { jsonProp } from "./arbitraries";

const record: fc.Arbitrary<JournalErrorRecord> = fc
  .record({
    name: fc.oneof(
      fc.constantFrom(
        "Error",
        "TypeError",
        "RangeError",
        "SyntaxError",
        "ReferenceError",
        "EvalError",
        "URIError",
        "AbortError",
      ),
      fc.string({ minLength: 1, maxLength: 10 }),
    ),
    message: fc.string({ maxLength: 30 }),
    code: fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
    props: fc.dictionary(
      fc
        .string({ minLength: 1, maxLength: 8 })
        .filter((k) => !["name", "message", "stack", "cause", "errors", "code"].includes(k)),
      jsonProp,
      { maxKeys: 4 },
    ),
    cause: fc.option(
      fc.oneof(
        jsonProp,
        fc.record({ $error: fc.record({ name: fc.constant("TypeError"), message: fc.string() }) }),
      ),
      {
        nil: undefined,
      },
    ),
  })
  .map(({ name, message, code, props, cause }) => {
    const body: JournalErrorRecord["$error"] = { name, message };
    if (code !== undefined) body.code = code;
    for (const [k, v] of Object.entries(props))
      Object.defineProperty(body, k, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    if (cause !== undefined) body.cause = cause;
    // Records are plain JSON: normalise fast-check's null-prototype objects.
    return JSON.parse(JSON.stringify({ $error: body })) as JournalErrorRecord;
  });

describe("error records", () => {
  it("round-trip: toErrorRecord(fromErrorRecord(r)) deep-equals r for 10,000 generated records", () => {
    fc.assert(
      fc.property(record, (r) => {
        expect(toErrorRecord(fromErrorRecord(r))).toStrictEqual(r);
        // The same holds across the codec, as a replayed error goes.
        const back = decode(encode(fromErrorRecord(r))) as Error;
        expect(toErrorRecord(back)).toStrictEqual(r);
        return true;
      }),
      { numRuns: 10_000 },
    );
  });

  it("rebuilds the built-in subclass named by the record, else an Error carrying the name", () => {
    const type = fromErrorRecord({ $error: { name: "TypeError", message: "m", code: "x/y" } });
    expect(type).toBeInstanceOf(TypeError);
    expect((type as TypeError & { code: string }).code).toBe("x/y");
    const custom = fromErrorRecord({
      $error: { name: "QuotaError", message: "full", retryable: true },
    });
    expect(Object.getPrototypeOf(custom)).toBe(Error.prototype);
    expect(custom.name).toBe("QuotaError");
    expect(String(custom)).toBe("QuotaError: full");
    expect((custom as Error & { retryable: boolean }).retryable).toBe(true);
  });

  it("keeps own enumerable JSON props and drops the stack and non-JSON props", () => {
    class HttpError extends Error {
      status = 503;
      retryable = true;
      handler = () => 1;
      when = new Date(0);
      details = { url: "/x", tries: [1, 2], fn: () => 2 };
      override name = "HttpError";
    }
    expect(toErrorRecord(new HttpError("unavailable"))).toStrictEqual({
      $error: {
        name: "HttpError",
        message: "unavailable",
        status: 503,
        retryable: true,
        details: { url: "/x", tries: [1, 2] },
      },
    });
  });

  it("keeps the cause, nested errors as records, and an AggregateError's errors", () => {
    const e = new AggregateError([new TypeError("a"), new RangeError("b")], "both", {
      cause: new Error("root"),
    });
    const r = toErrorRecord(e);
    expect(r).toStrictEqual({
      $error: {
        name: "AggregateError",
        message: "both",
        cause: { $error: { name: "Error", message: "root" } },
        errors: [
          { $error: { name: "TypeError", message: "a" } },
          { $error: { name: "RangeError", message: "b" } },
        ],
      },
    });
    const back = fromErrorRecord(r) as AggregateError;
    expect(back).toBeInstanceOf(AggregateError);
    expect(back.errors[1]).toBeInstanceOf(RangeError);
    expect(back.cause).toBeInstanceOf(Error);
    expect(toErrorRecord(back)).toStrictEqual(r);
  });

  it("wraps thrown non-Error values", () => {
    expect(toErrorRecord("boom")).toStrictEqual({
      $error: { name: "Error", message: "boom", thrown: "boom" },
    });
    expect(toErrorRecord({ message: "m", code: 7 })).toStrictEqual({
      $error: { name: "Error", message: "m", thrown: { message: "m", code: 7 } },
    });
    expect(toErrorRecord(undefined)).toStrictEqual({
      $error: { name: "Error", message: "undefined" },
    });
  });

  it("survives a self-referencing error and never sets a prototype from a __proto__ prop", () => {
    const e = new Error("loop") as Error & { self?: unknown };
    e.self = e;
    expect(toErrorRecord(e)).toStrictEqual({ $error: { name: "Error", message: "loop" } });
    const r = JSON.parse(
      '{"$error":{"name":"Error","message":"m","__proto__":{"polluted":true}}}',
    ) as JournalErrorRecord;
    const back = fromErrorRecord(r);
    expect(Object.getPrototypeOf(back)).toBe(Error.prototype);
    expect(Object.hasOwn(back, "__proto__")).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(toErrorRecord(back)).toStrictEqual(r);
  });

  it("recognises records by shape", () => {
    expect(isErrorRecord({ $error: { name: "E", message: "m" } })).toBe(true);
    expect(isErrorRecord({ $error: { name: "E" } })).toBe(false);
    expect(isErrorRecord({ $error: { name: "E", message: "m" }, extra: 1 })).toBe(false);
    expect(isErrorRecord(new Error("x"))).toBe(false);
  });
});
