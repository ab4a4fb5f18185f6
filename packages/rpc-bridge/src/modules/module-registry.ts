import { type ImportSpecifier, parse } from "es-module-lexer/js";
import type { BridgeHostFunction } from "../context";
import { BridgeError } from "../errors";
import { RUNNER_SOURCE, RUNTIME_SOURCE, shimSource } from "../host/isolate-source";
import {
  type BridgeModuleDefinition,
  type BridgeModuleMap,
  type HostModuleMeta,
  hostModuleMeta,
  isSourceModule,
} from "./modules";

/** A configured host module, checked. */
export interface HostModuleEntry {
  kind: "host";
  specifier: string;
  /** The loader module name of its shim. */
  file: string;
  /** Its handle id in every run (host modules are handles 1..n). */
  handleId: number;
  private: boolean;
  meta: HostModuleMeta | undefined;
  /** The module object (`this` of its functions). */
  object: object;
  functions: ReadonlyMap<string, BridgeHostFunction>;
}

/** A configured source module, checked lazily (its imports are parsed at first use). */
export interface SourceModuleEntry {
  kind: "source";
  specifier: string;
  file: string;
  source: string;
  description: string | undefined;
  declarations: string | undefined;
  /** Its source with every import specifier rewritten to a loader file name, once parsed. */
  prepared?: { code: string; imports: string[] };
}

/** One configured module. */
export type ModuleEntry = HostModuleEntry | SourceModuleEntry;

/** The loader module name of the runner, the isolate's main module. */
export const MAIN_MODULE = "__dk_runner.js";

/** Names a program may not use for modules: runtimes' own schemes and the bridge's internal files. */
const RESERVED_PREFIXES = ["node:", "cloudflare:", "workerd:", "__dk", "."];
const SPECIFIER = /^[A-Za-z@][A-Za-z0-9@._:/+-]{0,199}$/;
const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** `then` would make a module namespace thenable; `default` is the program's own export. */
const FORBIDDEN_EXPORTS = new Set(["default", "then", "constructor", "__proto__"]);

function checkSpecifier(specifier: string): void {
  if (!SPECIFIER.test(specifier) || RESERVED_PREFIXES.some((p) => specifier.startsWith(p))) {
    throw new BridgeError(
      "bridge/invalid-module",
      `Module specifier "${specifier}" is not allowed: use a name such as "codemode:jobs" (letters, digits, @ . _ : / + -), not starting with node:, cloudflare:, workerd:, __dk or a dot.`,
    );
  }
}

function hostEntry(specifier: string, object: object, index: number): HostModuleEntry {
  const functions = new Map<string, BridgeHostFunction>();
  for (const name of Object.keys(object)) {
    const value = (object as Record<string, unknown>)[name];
    if (typeof value !== "function") {
      throw new BridgeError(
        "bridge/invalid-module",
        `Host module "${specifier}" has a non-function export "${name}"; a host module is an object of functions.`,
      );
    }
    if (!EXPORT_NAME.test(name) || FORBIDDEN_EXPORTS.has(name)) {
      throw new BridgeError(
        "bridge/invalid-module",
        `Host module "${specifier}" exports "${name}", which is not allowed: use an identifier other than default, then, constructor or __proto__.`,
      );
    }
    functions.set(name, value as BridgeHostFunction);
  }
  if (functions.size === 0) {
    throw new BridgeError(
      "bridge/invalid-module",
      `Host module "${specifier}" has no functions; give it at least one.`,
    );
  }
  const meta = hostModuleMeta(object);
  return {
    kind: "host",
    specifier,
    file: `__dk_host_${index}.js`,
    handleId: index + 1,
    private: meta?.private ?? false,
    meta,
    object,
    functions,
  };
}

/** The parsed imports of a module's source, or a coded error naming what is wrong. */
function parseImports(
  source: string,
  what: string,
  code: "bridge/invalid-program" | "bridge/invalid-module",
): { imports: readonly ImportSpecifier[]; exports: readonly string[] } {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    const where = (error as { idx?: number }).idx;
    throw new BridgeError(
      code,
      `${what} does not parse as an ES module${where === undefined ? "" : ` (near character ${where})`}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return { imports: parsed[0], exports: parsed[1].map((e) => e.n) };
}

/**
 * Rewrites every import specifier of `source` with `resolve(specifier)` (a loader file name).
 * `import.meta` is left alone; a computed `import()` is refused.
 */
function rewriteImports(
  source: string,
  imports: readonly ImportSpecifier[],
  what: string,
  code: "bridge/invalid-program" | "bridge/invalid-module",
  resolve: (specifier: string) => string,
): string {
  let out = "";
  let at = 0;
  for (const entry of imports) {
    if (entry.d === -2) continue;
    if (entry.n === undefined) {
      throw new BridgeError(
        code,
        `${what} uses import() with a computed specifier (${source.slice(entry.s, entry.e)}); import modules by their literal name.`,
      );
    }
    const file = `./${resolve(entry.n)}`;
    const raw = source.slice(entry.s, entry.e);
    const quoted = raw.startsWith('"') || raw.startsWith("'") || raw.startsWith("`");
    out += source.slice(at, entry.s) + (quoted ? JSON.stringify(file) : file);
    at = entry.e;
  }
  return out + source.slice(at);
}

/**
 * The checked form of a `modules` option, shared by every run of an executor: the configured
 * modules by specifier, the host modules in handle-id order, and what each program's isolate
 * loads. Source modules are parsed at first use and kept prepared; host shims are built once.
 */
export class ModuleRegistry {
  /** Every configured module by specifier. */
  readonly bySpecifier: ReadonlyMap<string, ModuleEntry>;
  /** Host modules in handle-id order (index i has handle id i + 1). */
  readonly hosts: readonly HostModuleEntry[];
  /** The shim text of each host module, built on first use. */
  readonly #shims = new Map<HostModuleEntry, string>();

  // ── Configuration ──────────────────────────────────────────────────────────

  /**
   * Checks a `modules` option: specifiers, host modules' export names. Source modules' imports are
   * checked when a program first needs them (see {@link #prepare}).
   * @throws BridgeError `bridge/invalid-module`.
   */
  constructor(modules: BridgeModuleMap) {
    const bySpecifier = new Map<string, ModuleEntry>();
    const hosts: HostModuleEntry[] = [];
    let sources = 0;
    for (const [specifier, definition] of Object.entries(modules) as Array<
      [string, BridgeModuleDefinition]
    >) {
      checkSpecifier(specifier);
      if (isSourceModule(definition)) {
        const source = typeof definition === "string" ? definition : definition.source;
        if (typeof source !== "string") {
          throw new BridgeError(
            "bridge/invalid-module",
            `Source module "${specifier}" has no source text.`,
          );
        }
        bySpecifier.set(specifier, {
          kind: "source",
          specifier,
          file: `__dk_source_${sources++}.js`,
          source,
          description: typeof definition === "string" ? undefined : definition.description,
          declarations: typeof definition === "string" ? undefined : definition.declarations,
        });
      } else if (typeof definition === "object" && definition !== null) {
        // Handle ids follow configuration order: host module i is handle i + 1 in every run.
        const entry = hostEntry(specifier, definition, hosts.length);
        hosts.push(entry);
        bySpecifier.set(specifier, entry);
      } else {
        throw new BridgeError(
          "bridge/invalid-module",
          `Module "${specifier}" must be an object of functions (host module) or source text.`,
        );
      }
    }
    this.bySpecifier = bySpecifier;
    this.hosts = hosts;
  }

  /** Specifiers a program may import, for error messages. */
  publicSpecifiers(): string[] {
    const names: string[] = [];
    for (const entry of this.bySpecifier.values()) {
      if (entry.kind === "source" || !entry.private) names.push(entry.specifier);
    }
    return names;
  }

  // ── Program graphs ─────────────────────────────────────────────────────────

  /**
   * Builds the isolate's module graph for one program: the runner, the runtime, the program (its
   * imports rewritten to loader file names) and every module it reaches, shims for host modules and
   * the prepared text of source modules. Nothing runs here: a program importing a private or
   * unknown module, or using a computed `import()`, is refused with an error naming it.
   * @throws BridgeError `bridge/not-found`, `bridge/module-private`, `bridge/invalid-program`, `bridge/invalid-module`.
   */
  graph(program: string): Record<string, string> {
    const what = "The program";
    const { imports, exports } = parseImports(program, what, "bridge/invalid-program");
    if (!exports.includes("default")) {
      throw new BridgeError(
        "bridge/invalid-program",
        "The program has no default export; write it as `export default async function (input) { … }`.",
      );
    }
    const reached = new Set<ModuleEntry>();
    const visit = (entry: ModuleEntry): void => {
      if (reached.has(entry)) return;
      reached.add(entry);
      if (entry.kind === "source") {
        for (const spec of this.#prepare(entry).imports) {
          const target = this.bySpecifier.get(spec);
          if (target) visit(target);
        }
      }
    };
    const code = rewriteImports(program, imports, what, "bridge/invalid-program", (spec) => {
      const entry = this.bySpecifier.get(spec);
      if (!entry) {
        const available = this.publicSpecifiers();
        throw new BridgeError(
          "bridge/not-found",
          `The program imports "${spec}", which is not available to programs. ${available.length > 0 ? `It may import: ${available.join(", ")}.` : "No modules are configured."}`,
        );
      }
      // Private host modules are reachable from source modules only, never from the program itself.
      if (entry.kind === "host" && entry.private) {
        throw new BridgeError(
          "bridge/module-private",
          `The program imports "${spec}", a private module that only the configured source modules may import; import the module that wraps it instead.`,
        );
      }
      visit(entry);
      return entry.file;
    });
    const modules: Record<string, string> = {
      [MAIN_MODULE]: RUNNER_SOURCE,
      "__dk_runtime.js": RUNTIME_SOURCE,
      "__dk_program.js": code,
    };
    for (const entry of reached) {
      modules[entry.file] = entry.kind === "host" ? this.#shim(entry) : this.#prepare(entry).code;
    }
    return modules;
  }

  // ── Module texts ───────────────────────────────────────────────────────────

  /**
   * Parses a source module's imports (once) and rewrites them; a source module may import host
   * modules, private ones included, and other source modules.
   * @throws BridgeError `bridge/invalid-module` when it does not parse or imports an unknown module.
   */
  #prepare(entry: SourceModuleEntry): { code: string; imports: string[] } {
    if (entry.prepared) return entry.prepared;
    const what = `Source module "${entry.specifier}"`;
    const { imports } = parseImports(entry.source, what, "bridge/invalid-module");
    const targets: string[] = [];
    const code = rewriteImports(entry.source, imports, what, "bridge/invalid-module", (spec) => {
      const target = this.bySpecifier.get(spec);
      if (!target) {
        throw new BridgeError(
          "bridge/invalid-module",
          `${what} imports "${spec}", which is not a configured module; add it to modules.`,
        );
      }
      targets.push(spec);
      return target.file;
    });
    entry.prepared = { code, imports: targets };
    return entry.prepared;
  }

  #shim(entry: HostModuleEntry): string {
    let source = this.#shims.get(entry);
    if (source === undefined) {
      source = shimSource(entry.handleId, entry.functions.keys());
      this.#shims.set(entry, source);
    }
    return source;
  }
}
