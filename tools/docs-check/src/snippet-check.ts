import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import type * as TypeScript from "typescript";
import { Guide } from "./guide.ts";

/** A snippet that does not compile: where it is in its guide, and what the compiler said. */
export interface SnippetProblem {
  /** The guide's name, as the caller read it (`docs/getting-started.md`). */
  readonly guide: string;
  /** 1-based line in the guide of the line the compiler points at. */
  readonly line: number;
  /** The compiler's message, flattened to one line. */
  readonly message: string;
}

/** What one check found. */
export interface SnippetReport {
  /** Blocks compiled. */
  readonly checked: number;
  /** Blocks marked ```ts partial, not compiled. */
  readonly partial: number;
  readonly problems: readonly SnippetProblem[];
}

/** How snippets are compiled. */
export interface SnippetCheckOptions {
  /**
   * The directory the snippets are compiled in: their imports resolve from its `node_modules`, as a
   * file of a project there would.
   */
  readonly projectDir: string;
  /**
   * Declaration files compiled beside every snippet: the `Env` the guides document (what
   * `wrangler types` writes for their bindings).
   */
  readonly declarations: readonly string[];
}

const ts = createRequire(import.meta.url)("typescript") as typeof TypeScript;

/**
 * The compiler options of a Worker project the guides describe: the starter's (strict,
 * `noUncheckedIndexedAccess`, `verbatimModuleSyntax`, bundler resolution, the Workers runtime's and
 * the vitest plugin's types). Every snippet is its own module (`moduleDetection: force`), as a file
 * pasted into a project is.
 */
const COMPILER_OPTIONS: TypeScript.CompilerOptions = {
  target: ts.ScriptTarget.ES2023,
  lib: ["lib.es2023.d.ts"],
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  moduleDetection: ts.ModuleDetectionKind.Force,
  strict: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  skipLibCheck: true,
  noEmit: true,
  types: ["@cloudflare/workers-types", "@cloudflare/vitest-plugin/types"],
};

/**
 * Compiles every TypeScript block of `guides` not marked ```ts partial, each as its own file of a
 * project in `options.projectDir`, in one program, and reports each error at its line in its guide.
 */
export function checkSnippets(
  guides: readonly Guide[],
  options: SnippetCheckOptions,
): SnippetReport {
  // Each snippet lives at a path of its own under the project, so its imports resolve from there.
  const virtual = new Map<string, { guide: Guide; firstLine: number; text: string }>();
  let partial = 0;
  for (const [g, guide] of guides.entries()) {
    for (const block of guide.snippets) {
      if (block.partial) {
        partial += 1;
        continue;
      }
      const path = join(options.projectDir, ".snippets", `${g}-${block.line}.ts`);
      virtual.set(path, { guide, firstLine: block.line, text: block.text });
    }
  }

  const host = ts.createCompilerHost(COMPILER_OPTIONS, true);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getCurrentDirectory = () => options.projectDir;
  host.readFile = (path) => virtual.get(path)?.text ?? readFile(path);
  host.fileExists = (path) => virtual.has(path) || fileExists(path);
  host.getSourceFile = (path, language, onError, create) => {
    const snippet = virtual.get(path);
    return snippet === undefined
      ? getSourceFile(path, language, onError, create)
      : ts.createSourceFile(path, snippet.text, language, true, ts.ScriptKind.TS);
  };

  const program = ts.createProgram({
    rootNames: [...options.declarations, ...virtual.keys()],
    options: COMPILER_OPTIONS,
    host,
  });
  const problems: SnippetProblem[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, " ");
    const file = diagnostic.file;
    const snippet = file === undefined ? undefined : virtual.get(file.fileName);
    if (file === undefined || snippet === undefined) {
      // An error outside the snippets (a declaration file, the options) fails the check too.
      const where = file === undefined ? "" : `${relative(options.projectDir, file.fileName)}: `;
      problems.push({ guide: "(snippet check)", line: 0, message: `${where}${message}` });
      continue;
    }
    const { line } = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    problems.push({ guide: snippet.guide.name, line: snippet.firstLine + line, message });
  }
  problems.sort((a, b) => a.guide.localeCompare(b.guide) || a.line - b.line);
  return { checked: virtual.size, partial, problems };
}

/**
 * The guides the snippet check reads under the repository `root`: the root README, docs/*.md and
 * the README of every package, app, example and tool, named by their path from `root`.
 */
export function documentedGuides(root: string): Guide[] {
  const names = [
    "README.md",
    ...readdirSync(join(root, "docs"))
      .filter((name) => name.endsWith(".md"))
      .map((name) => `docs/${name}`),
    ...["packages", "apps", "examples", "tools"].flatMap((dir) =>
      readdirSync(join(root, dir)).map((name) => `${dir}/${name}/README.md`),
    ),
  ];
  return names
    .filter((name) => existsSync(join(root, name)))
    .sort()
    .map((name) => Guide.read(join(root, name), name));
}
