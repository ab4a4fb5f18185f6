import { describe, expect, it } from "vitest";
import { isUnsafeToRepeat, unsafeToRepeat } from "../src/index";

describe("unsafeToRepeat", () => {
  it("marks functions, streams and frozen objects and returns them unchanged", () => {
    const fn = () => 1;
    const stream = new ReadableStream();
    const frozen = Object.freeze({ cb: 1 });
    expect(unsafeToRepeat(fn)).toBe(fn);
    expect(unsafeToRepeat(stream)).toBe(stream);
    expect(unsafeToRepeat(frozen)).toBe(frozen);
    expect(isUnsafeToRepeat(fn)).toBe(true);
    expect(isUnsafeToRepeat(stream)).toBe(true);
    expect(isUnsafeToRepeat(frozen)).toBe(true);
    expect(Object.keys(fn)).toEqual([]);
  });

  it("leaves unmarked values and primitives unmarked", () => {
    expect(isUnsafeToRepeat(() => 1)).toBe(false);
    expect(isUnsafeToRepeat(unsafeToRepeat(5))).toBe(false);
    expect(isUnsafeToRepeat(null)).toBe(false);
  });
});
