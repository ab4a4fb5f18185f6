import { describe, expect, it } from "vitest";
import { formatOffset, parseOffset } from "../src/index";
import { responseCursor } from "../src/protocol/cursor";
import { parseJsonBody } from "../src/protocol/json-mode";

describe("protocol offsets", () => {
  it("formats seq positions as fixed-width offsets that sort like the stream", () => {
    expect(formatOffset(0)).toBe("0000000000000000_0000000000000000");
    expect(formatOffset(42)).toBe("0000000000000042_0000000000000000");
    const offsets = [0, 1, 9, 10, 99, 100, 12345].map(formatOffset);
    expect([...offsets].sort()).toEqual(offsets);
  });

  it("reads -1, now and issued offsets, and refuses everything else", () => {
    expect(parseOffset("-1")).toEqual({ kind: "seq", seq: 0 });
    expect(parseOffset("now")).toEqual({ kind: "now" });
    expect(parseOffset(formatOffset(7))).toEqual({ kind: "seq", seq: 7 });
    for (const bad of [
      "",
      "0",
      "0,1",
      "0 1",
      "../x",
      "now\n",
      "7_0",
      "0000000000000007_0000000000000003",
    ]) {
      expect(parseOffset(bad).kind).toBe("invalid");
    }
  });
});

describe("protocol cursors", () => {
  it("counts 20-second intervals and never repeats an echoed cursor", () => {
    const now = Date.UTC(2024, 9, 9) + 20_000 * 1000 + 5;
    expect(responseCursor(null, now, 20_000)).toBe("1000");
    expect(responseCursor("999", now, 20_000)).toBe("1000");
    const bumped = Number(responseCursor("1000", now, 20_000, () => 0));
    expect(bumped).toBe(1001);
    expect(Number(responseCursor("1000", now, 20_000, () => 0.9999))).toBe(1180);
  });
});

describe("JSON mode bodies", () => {
  it("flattens one level of a top-level array and keeps each message's exact text", () => {
    const body = ' [ {"a": 1}, [1,2] , "x,]\\"", 12345678901234567890, {"n":[{"m":"]"}]} ] ';
    expect(parseJsonBody(body, false)).toEqual({
      ok: true,
      messages: ['{"a": 1}', "[1,2]", '"x,]\\""', "12345678901234567890", '{"n":[{"m":"]"}]}'],
    });
    expect(parseJsonBody('{"k":"v"}', false)).toEqual({ ok: true, messages: ['{"k":"v"}'] });
    expect(parseJsonBody("[[[1,2,3]]]", false)).toEqual({ ok: true, messages: ["[[1,2,3]]"] });
  });

  it("refuses invalid JSON, and an empty array unless creating", () => {
    expect(parseJsonBody("{ invalid }", false).ok).toBe(false);
    expect(parseJsonBody("[]", false).ok).toBe(false);
    expect(parseJsonBody(" [ ] ", true)).toEqual({ ok: true, messages: [] });
  });
});
