import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// STYLE, "Code": a value of several kinds is a named discriminated union, told apart by its tag.
// `Array.isArray` may check untrusted input (`unknown`) and normalize "one or many" (`T | T[]`),
// but never tell two different kinds apart (`Plan | Entry[]`): that is a union without a name.
const root = fileURLToPath(new URL("../../../", import.meta.url));
const ts = createRequire(`${root}package.json`)("typescript") as typeof import("typescript");

/** Every `.ts` file below `dir`, the generated ones and the isolate's bundle excepted. */
function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .filter((entry) => !entry.name.endsWith(".generated.ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Each `Array.isArray(x)` of `files` whose `x` is a union of an array and another kind, as `file:line`. */
function dispatches(files: readonly string[]): string[] {
  const program = ts.createProgram([...files], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const found: string[] = [];
  const isArrayish = (type: import("typescript").Type) =>
    checker.isArrayType(type) || checker.isTupleType(type);
  for (const file of files) {
    const source = program.getSourceFile(file);
    if (source === undefined) continue;
    const visit = (node: import("typescript").Node): void => {
      if (
        ts.isCallExpression(node) &&
        node.expression.getText(source) === "Array.isArray" &&
        node.arguments.length === 1
      ) {
        const type = checker.getTypeAtLocation(node.arguments[0] as import("typescript").Node);
        if (type.isUnion()) {
          const members = type.types.filter(
            (member) => !(member.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null)),
          );
          const arrays = members.filter(isArrayish);
          const others = members.filter((member) => !isArrayish(member));
          const elements = arrays.flatMap((array) => checker.getTypeArguments(array as never));
          const oneOrMany = others.every((other) =>
            elements.some((element) => checker.isTypeAssignableTo(other, element)),
          );
          if (arrays.length > 0 && others.length > 0 && !oneOrMany) {
            const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
            found.push(`${relative(root, file)}:${line + 1}`);
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe("named unions instead of Array.isArray dispatch", () => {
  const packages = join(root, "packages");
  const names = readdirSync(packages).filter((name) => existsSync(join(packages, name, "src")));

  for (const name of names) {
    it(`packages/${name}/src tells no two kinds apart with Array.isArray`, () => {
      expect(dispatches(sources(join(packages, name, "src")))).toEqual([]);
    });
  }

  it("finds a dispatch, and lets one-or-many and untrusted input pass", () => {
    const fixture = fileURLToPath(new URL("./fixtures/array-dispatch.ts", import.meta.url));
    expect(dispatches([fixture])).toEqual(["tools/docs-check/checks/fixtures/array-dispatch.ts:5"]);
  });
});
