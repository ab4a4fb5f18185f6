import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// docs/composing.md, "Names of types": no package has been published, so a renamed name is simply
// renamed. No source keeps an old name alive: no `deprecated.ts`, no `@deprecated` tag.
const packages = fileURLToPath(new URL("../../../packages/", import.meta.url));

/** Every `.ts` file below `dir`, recursively. */
function sources(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sources(path));
    else if (entry.name.endsWith(".ts")) found.push(path);
  }
  return found;
}

describe("no deprecated aliases before the first release", () => {
  const names = readdirSync(packages).filter((name) => existsSync(join(packages, name, "src")));

  it("finds the packages' sources", () => {
    expect(names.length).toBeGreaterThan(8);
  });

  for (const name of names) {
    it(`keeps no old names in packages/${name}/src`, () => {
      const files = sources(join(packages, name, "src"));
      expect(files.filter((file) => file.endsWith("/deprecated.ts"))).toEqual([]);
      const tagged = files.filter((file) => /@deprecated\b/.test(readFileSync(file, "utf8")));
      expect(tagged).toEqual([]);
    });
  }
});
