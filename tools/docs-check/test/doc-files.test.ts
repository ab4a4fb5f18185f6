import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Guide } from "../src/index.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const guides = readdirSync(`${root}docs`)
  .filter((name) => name.endsWith(".md"))
  .map((name) => Guide.read(`${root}docs/${name}`))
  .filter((guide) => guide.files.length > 0);

describe("code blocks that name a file", () => {
  for (const guide of guides) {
    it(`${guide.name} shows each named file exactly as it is in the repository`, () => {
      for (const block of guide.files) {
        const actual = readFileSync(root + block.file, "utf8");
        expect(block.text, `${guide.name} line ${block.line} (${block.file})`).toBe(actual);
      }
    });
  }
});
