import { describe, expect, it } from "vitest";
import { splitText } from "../src/index";

describe("splitText", () => {
  it("cuts a text into parts of at most maxUnits that join back, never inside a surrogate pair", () => {
    const text = "ab😀cd😀😀e".repeat(50);
    for (const size of [2, 3, 4, 7, 1000]) {
      const parts = splitText(text, size);
      expect(parts.join("")).toBe(text);
      for (const part of parts) {
        expect(part.length).toBeLessThanOrEqual(size);
        expect(/[\uD800-\uDBFF]$/.test(part)).toBe(false); // no high surrogate left at a cut
      }
    }
    expect(splitText("", 5)).toEqual([]);
  });
});
