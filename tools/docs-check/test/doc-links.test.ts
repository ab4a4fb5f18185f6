import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const docsDir = join(root, "docs");

/** The guides of docs/ and the demo's README (whose links point into the packages and docs/). */
const pages = [
  ...readdirSync(docsDir)
    .filter((file) => file.endsWith(".md"))
    .map((file) => join("docs", file)),
  "apps/demo-worker/README.md",
];

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N}\- _]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a Markdown file's headings. */
function anchors(path: string): Set<string> {
  const text = readFileSync(path, "utf8").replace(/^```[\s\S]*?^```/gm, "");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1] ?? "")));
}

/** The relative links of a Markdown file outside code, with the line each is on. */
function links(path: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  let fenced = false;
  for (const [i, text] of readFileSync(path, "utf8").split("\n").entries()) {
    if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
    if (fenced) continue;
    for (const match of text.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] ?? "";
      if (!/^[a-z]+:/.test(target)) found.push({ target, line: i + 1 });
    }
  }
  return found;
}

describe("links between the guides", () => {
  for (const page of pages) {
    it(`${page} links only to files and headings that exist`, () => {
      const broken: string[] = [];
      const source = join(root, page);
      for (const { target, line } of links(source)) {
        const [file = "", anchor] = target.split("#");
        const path = file === "" ? source : join(dirname(source), file);
        if (!existsSync(path)) broken.push(`line ${line}: ${target} (no such file)`);
        else if (anchor && statSync(path).isFile() && !anchors(path).has(anchor)) {
          broken.push(`line ${line}: ${target} (no such heading)`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});
