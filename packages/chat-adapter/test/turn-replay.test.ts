import { describe, expect, it } from "vitest";
import { forEachArrayItem } from "../src/turn-replay";
import { inFixture } from "./helpers";

const TRICKY: unknown[] = [
  { type: "text-delta", id: "t", delta: 'a,b],[{"c":"d"}' },
  { type: "text-delta", id: "t", delta: 'quote \\" and backslash at the end \\' },
  { type: "text-delta", id: "t", delta: "é😀\u2028\u0000\n\t" },
  { type: "data-x", data: { nested: [1, [2, [3, { k: "]" }]]], empty: {}, list: [] } },
  "a string item, with a comma",
  [1, -0, 1.5e-7, null, true],
  {},
  [],
  42,
];

describe("cutting a stored segment into its chunks' JSON", () => {
  it("gives each top-level item's JSON as JSON.stringify wrote it, whatever the strings hold", () => {
    for (let n = 0; n <= TRICKY.length; n++) {
      const items = TRICKY.slice(0, n);
      const text = JSON.stringify(items);
      const cut: string[] = [];
      forEachArrayItem(text, (start, end) => cut.push(text.slice(start, end)));
      expect(cut).toEqual(items.map((item) => JSON.stringify(item)));
    }
  });

  it("cuts 500 random arrays of strings full of quotes, backslashes and brackets like JSON.parse", () => {
    const alphabet = ['"', "\\", ",", "[", "]", "{", "}", "x", "é", "😀", "\n"];
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const text = () =>
      Array.from(
        { length: Math.floor(random() * 12) },
        () => alphabet[Math.floor(random() * alphabet.length)],
      ).join("");
    for (let round = 0; round < 500; round++) {
      const items = Array.from({ length: 1 + Math.floor(random() * 5) }, () =>
        random() < 0.5 ? { type: "text-delta", delta: text(), [text()]: [text()] } : text(),
      );
      const json = JSON.stringify(items);
      const cut: string[] = [];
      forEachArrayItem(json, (start, end) => cut.push(json.slice(start, end)));
      expect(cut).toEqual(items.map((item) => JSON.stringify(item)));
    }
  });

  it("resumes a turn of tricky chunks with frames byte-equal to the chunks' JSON", async () => {
    await inFixture(async ({ chat }) => {
      const turn = chat.startTurn("tricky", { messageId: "m" });
      const chunks = TRICKY.filter(
        (item) => item !== null && typeof item === "object" && "type" in item,
      );
      for (const chunk of chunks) turn.write(chunk as never);
      turn.flush();
      const reader = (chat.resumeResponse("tricky").body as ReadableStream<Uint8Array>).getReader();
      const text = new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      const expected = [{ type: "start", messageId: "m" }, ...chunks]
        .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
        .join("");
      expect(text).toBe(expected);
      turn.finish();
    });
  });
});
