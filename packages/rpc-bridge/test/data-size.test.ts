import { encodedSize } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import { isBridgeError } from "../src/errors";
import { dataSize } from "../src/values/data-size";

const LIMIT = "bridge/too-large";

function sizeOf(value: unknown, max = 1 << 30): number {
  return dataSize(value, max, "args", "maxRequestBytes");
}

/** A deterministic mix of every kind of UTF-16 code unit JSON escapes or UTF-8 widens. */
function mixedStrings(count: number): string[] {
  const units = [0, 7, 8, 9, 10, 12, 13, 31, 32, 34, 47, 92, 127, 128, 2047, 2048, 0x2028];
  const out: string[] = [];
  let seed = 7;
  for (let n = 0; n < count; n++) {
    let text = "";
    for (let i = 0; i < 12; i++) {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      const pick = (seed >>> 0) % (units.length + 3);
      if (pick < units.length) text += String.fromCharCode(units[pick] as number);
      else if (pick === units.length)
        text += "\u{1F600}"; // a surrogate pair
      else if (pick === units.length + 1)
        text += "\ud800"; // a lone high surrogate
      else text += "\udc00"; // a lone low surrogate
    }
    out.push(text);
  }
  return out;
}

describe("data sizes", () => {
  it("sizes plain JSON exactly as the handle-journal codec encodes it", () => {
    const values: unknown[] = [
      0,
      1,
      -1.5,
      1e21,
      5e-324,
      Number.MAX_SAFE_INTEGER,
      true,
      false,
      null,
      "",
      "plain",
      [],
      {},
      [1, "two", [3, { four: 4 }], null],
      { "a.b": 1, 'q"uote': "x\\y", "\u0000dk": [], nested: { deeper: { list: [true] } } },
      Object.assign(Object.create(null), { id: "job:1", status: "running" }),
      ...mixedStrings(200),
      mixedStrings(20),
      { keys: Object.fromEntries(mixedStrings(20).map((k, i) => [k, i])) },
    ];
    for (const value of values) expect(sizeOf(value)).toBe(encodedSize(value));
  });

  it("sizes values that are not plain JSON through the codec", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 30; i++) deep = [deep];
    const values: unknown[] = [
      -0,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      10n,
      undefined,
      [1, undefined],
      { when: new Date(0) },
      new Map([["a", 1]]),
      new Uint8Array([1, 2, 3]),
      deep,
    ];
    for (const value of values) expect(sizeOf(value)).toBe(encodedSize(value));
  });

  it("refuses a value over the limit with the limit's code and the value's path", () => {
    let thrown: unknown;
    try {
      sizeOf(["x".repeat(100)], 50);
    } catch (error) {
      thrown = error;
    }
    expect(isBridgeError(thrown, LIMIT)).toBe(true);
    expect(thrown).toMatchObject({ path: "args", limit: "maxRequestBytes" });
    // Exactly at the limit is allowed.
    const exact = encodedSize(["x".repeat(100)]);
    expect(sizeOf(["x".repeat(100)], exact)).toBe(exact);
  });
});
