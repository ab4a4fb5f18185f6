import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// docs/composing.md, "Names of types": every exported type alias and interface carries its
// package's noun. Read from each package's `src/index.ts` with the TypeScript compiler, so a new
// export without the noun fails here; no old name is kept (no-deprecated.test.ts).
const root = fileURLToPath(new URL("../../../", import.meta.url));
const ts = createRequire(`${root}package.json`)("typescript") as typeof import("typescript");

/** Each package's nouns, as docs/composing.md lists them. */
const NOUNS: Record<string, readonly string[]> = {
  compose: [
    "Alarm",
    "Compose",
    "DurableKit",
    "Schema",
    "ErrorCode",
    "CommonError",
    "OwnError",
    "Option",
    "ArgumentError",
  ],
  "handle-journal": ["Journal", "Handle"],
  "rpc-bridge": ["Bridge", "Executor"],
  tasks: ["Task"],
  streams: ["Stream"],
  sse: ["Sse", "DurableStreams"],
  "chat-adapter": ["Chat"],
  inspect: ["Inspect"],
  testing: ["Testing"],
  "create-durablekit": ["Create"],
};

interface Offender {
  name: string;
  kind: string;
}

/** Exported type aliases and interfaces of a module whose names lack `nouns`. */
function offenders(entry: string, nouns: readonly string[]): Offender[] {
  const program = ts.createProgram([entry], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  if (source === undefined) throw new Error(`no ${entry}`);
  const module = checker.getSymbolAtLocation(source);
  if (module === undefined) throw new Error(`${entry} is not a module`);
  const found: Offender[] = [];
  for (const exported of checker.getExportsOfModule(module)) {
    const symbol =
      exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const declaration = symbol.declarations?.[0];
    if (declaration === undefined) continue;
    const kind = ts.isTypeAliasDeclaration(declaration)
      ? "type"
      : ts.isInterfaceDeclaration(declaration)
        ? "interface"
        : null;
    if (kind === null) continue;
    const name = exported.name;
    if (nouns.some((noun) => name.startsWith(noun))) continue;
    found.push({ name, kind });
  }
  return found;
}

describe("exported type names", () => {
  for (const pkg of Object.keys(NOUNS)) {
    it(`carry the noun of ${pkg.startsWith("create-") ? pkg : `@durablekit/${pkg}`} (${(NOUNS[pkg] ?? []).join(", ")})`, () => {
      expect(offenders(`${root}packages/${pkg}/src/index.ts`, NOUNS[pkg] ?? [])).toEqual([]);
    });
  }

  it("finds a type or interface without the noun, a deprecated alias included", () => {
    const entry = fileURLToPath(new URL("./fixtures/type-names.ts", import.meta.url));
    expect(offenders(entry, ["Demo"])).toEqual([
      { name: "Options", kind: "interface" },
      { name: "State", kind: "type" },
      { name: "OldOptions", kind: "type" },
    ]);
  });
});
