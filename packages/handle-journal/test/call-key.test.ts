import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  callIdOf,
  childKey,
  compareKeys,
  isCallKey,
  JournalError,
  parentKey,
  parseKey,
  topLevelKey,
} from "../src/index";

describe("call keys", () => {
  it("number top-level calls from 1 and handle calls as parent.n", () => {
    expect(topLevelKey(1)).toBe("1");
    expect(childKey("3", 2)).toBe("3.2");
    expect(childKey(childKey("3", 2), 1)).toBe("3.2.1");
    expect(parseKey("3.2.1")).toEqual([3, 2, 1]);
    expect(parentKey("3.2.1")).toBe("3.2");
    expect(parentKey("3")).toBeUndefined();
    expect(callIdOf("exec-1", "3.2")).toBe("exec-1:3.2");
  });

  it("parse back to the ordinals they were built from", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 1, maxLength: 6 }),
        (ordinals) => {
          let key = topLevelKey(ordinals[0] as number);
          for (const n of ordinals.slice(1)) key = childKey(key, n);
          expect(parseKey(key)).toEqual(ordinals);
          expect(isCallKey(key)).toBe(true);
          return true;
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("refuse malformed keys and ordinals with journal/invalid-argument", () => {
    for (const bad of ["", "0", "01", "1.", ".1", "1..2", "a", "1.0", "-1", "1e3", " 1"]) {
      expect(() => parseKey(bad), bad).toThrow(JournalError);
      expect(isCallKey(bad)).toBe(false);
    }
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 60]) {
      let error: unknown;
      try {
        topLevelKey(bad);
      } catch (e) {
        error = e;
      }
      expect((error as JournalError).code).toBe("journal/invalid-argument");
    }
  });

  it("order by ordinals, parents before their children", () => {
    const keys = ["10", "2", "3.2", "3", "3.10", "3.1.5", "1"];
    expect([...keys].sort(compareKeys)).toEqual(["1", "2", "3", "3.1.5", "3.2", "3.10", "10"]);
  });
});
