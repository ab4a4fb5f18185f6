import { describe, expect, it } from "vitest";
import { utf8ByteLength } from "../src/index";

const encoded = (text: string) => new TextEncoder().encode(text).byteLength;

describe("utf8ByteLength", () => {
  it("answers what TextEncoder does, lone surrogates and pairs included", () => {
    const cases = [
      "",
      "plain ascii",
      "é",
      "€",
      "😀",
      "a😀b",
      "\ud83d",
      "\ude00",
      "\ud83d\ud83d",
      "\ud83dx",
      "x\ud83d",
      "\ude00\ud83d",
      "\u0000\u007f\u0080\u07ff\u0800\uffff",
    ];
    for (const text of cases)
      expect(utf8ByteLength(text), JSON.stringify(text)).toBe(encoded(text));
  });

  it("answers what TextEncoder does for random strings of every width", () => {
    const pool = [
      0x41, 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xffff,
    ];
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let round = 0; round < 2_000; round++) {
      const units: number[] = [];
      const length = next() % 12;
      for (let i = 0; i < length; i++) units.push(pool[next() % pool.length] as number);
      const text = String.fromCharCode(...units);
      expect(utf8ByteLength(text), JSON.stringify(text)).toBe(encoded(text));
    }
  });
});
