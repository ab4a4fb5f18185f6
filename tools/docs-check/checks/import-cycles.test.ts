import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// No package's sources import each other in a circle, type-only imports included: a circle means
// two files hold one concept between them, or a port points back into its caller.
const packages = fileURLToPath(new URL("../../../packages/", import.meta.url));

/** The relative specifiers a module imports or re-exports from. */
function specifiersOf(text: string): string[] {
  return [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"(\.[^"]+)"/gms)].map(
    (match) => match[1] as string,
  );
}

/** The import graph of the `.ts` files below `src`: each file's local imports, by path. */
function graphOf(src: string): Map<string, string[]> {
  const files = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
  const known = new Set(files);
  const resolve = (from: string, spec: string) =>
    [spec, `${spec}.ts`, `${spec}/index.ts`]
      .map((candidate) => normalize(join(dirname(from), candidate)))
      .find((path) => known.has(path));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = specifiersOf(readFileSync(file, "utf8")).map((spec) => resolve(file, spec));
    graph.set(
      file,
      targets.filter((target): target is string => target !== undefined),
    );
  }
  return graph;
}

/** The circles of `graph` (strongly connected groups of two or more files), each sorted. */
function circlesOf(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) as number, index.get(target) as number));
      }
    }
    if (low.get(file) === index.get(file)) {
      const group: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        group.push(member);
      } while (member !== file);
      if (group.length > 1) circles.push(group.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
}

describe("no import circles inside a package", () => {
  const names = readdirSync(packages).filter((name) => existsSync(join(packages, name, "src")));

  for (const name of names) {
    it(`packages/${name}/src imports in no circle`, () => {
      const src = join(packages, name, "src");
      const circles = circlesOf(graphOf(src)).map((group) =>
        group.map((file) => relative(src, file)),
      );
      expect(circles).toEqual([]);
    });
  }

  it("finds a circle, type-only imports included", () => {
    const graph = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", ["a.ts"]],
    ]);
    expect(circlesOf(graph)).toEqual([["a.ts", "b.ts", "c.ts"]]);
    expect(specifiersOf('import type { A } from "./a";\nexport { B } from "../b";')).toEqual([
      "./a",
      "../b",
    ]);
  });
});
