import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { fileMapOf, sourceLayoutOf } from "../src/file-map.ts";

// Each package's DESIGN.md has a file map of `src/` (a table whose first cells name files and
// folders by their path below `src/`); its README names the folders. Both are read here against the
// tree, so a file added, moved or removed without its map fails.
const packages = fileURLToPath(new URL("../../../packages/", import.meta.url));

/** Every file and folder below `dir`, by path relative to it (`/`-separated, folders ending in `/`). */
function treeOf(dir: string): { files: string[]; folders: string[] } {
  const files: string[] = [];
  const folders: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = relative(dir, join(entry.parentPath, entry.name)).split(sep).join("/");
    if (entry.isDirectory()) folders.push(`${path}/`);
    else if (entry.isFile()) files.push(path);
  }
  return { files: files.sort(), folders: folders.sort() };
}

describe("the file maps of DESIGN.md and the folders of README.md", () => {
  const names = readdirSync(packages).filter((name) => existsSync(join(packages, name, "src")));

  it("finds the packages", () => {
    expect(names.length).toBeGreaterThan(8);
  });

  for (const name of names) {
    const root = join(packages, name);
    it(`lists every file and folder of packages/${name}/src in DESIGN.md, and nothing else`, () => {
      const tree = treeOf(join(root, "src"));
      const map = fileMapOf(readFileSync(join(root, "DESIGN.md"), "utf8"));
      expect(map.files, `DESIGN.md's file map of ${name}`).toEqual(tree.files);
      expect(map.folders, `DESIGN.md's file map of ${name}`).toEqual(tree.folders);
    });

    it(`names every folder of packages/${name}/src in README.md's source layout`, () => {
      const { folders } = treeOf(join(root, "src"));
      const layout = sourceLayoutOf(readFileSync(join(root, "README.md"), "utf8"));
      expect(layout, `README.md of ${name} has no "Source layout" section`).not.toBeNull();
      expect(layout?.includes("DESIGN.md"), `${name}'s source layout links DESIGN.md`).toBe(true);
      const missing = folders.filter((folder) => !layout?.includes(`\`${folder}\``));
      expect(missing, `folders README.md of ${name} does not name`).toEqual([]);
    });
  }

  it("reads a map's files and folders, and refuses a file listed twice", () => {
    const design = [
      "# x",
      "## File map (`src/`)",
      "",
      "| file | holds |",
      "|---|---|",
      "| `index.ts`, `a.ts` | the surface |",
      "| `sub/` | a folder |",
      "| `sub/b.ts` | b, not `c.ts` of another column |",
      "",
      "| `later.ts` | after the table: not read |",
    ].join("\n");
    expect(fileMapOf(design)).toEqual({
      files: ["a.ts", "index.ts", "sub/b.ts"],
      folders: ["sub/"],
    });
    expect(() => fileMapOf(design.replace("`a.ts`", "`index.ts`"))).toThrow(/twice: index\.ts/);
    expect(() => fileMapOf("# no map")).toThrow(/no "File map \(`src\/`\)" heading/);
  });
});
