import { type ImportSpecifier, parse } from "es-module-lexer/js";
import type { HostFunction } from "./context";
import { BridgeError } from "./errors";
import {
  type HostModuleMeta,
  hostModuleMeta,
  isSourceModule,
  type ModuleDefinition,
  type ModuleMap,
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
  functions: ReadonlyMap<string, HostFunction>;
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

/** The checked form of a `modules` option, shared by every run of an executor. */
export interface ModuleRegistry {
  bySpecifier: ReadonlyMap<string, ModuleEntry>;
  /** Host modules in handle-id order (index i has handle id i + 1). */
  hosts: readonly HostModuleEntry[];
}

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
  const functions = new Map<string, HostFunction>();
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
    functions.set(name, value as HostFunction);
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

/**
 * Checks a `modules` option: specifiers, host modules' export names. Source modules' imports are
 * checked when a program first needs them (see {@link prepareSourceModule}).
 * @throws BridgeError `bridge/invalid-module`.
 */
export function createModuleRegistry(modules: ModuleMap): ModuleRegistry {
  const bySpecifier = new Map<string, ModuleEntry>();
  const hosts: HostModuleEntry[] = [];
  let sources = 0;
  for (const [specifier, definition] of Object.entries(modules) as Array<
    [string, ModuleDefinition]
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
  return { bySpecifier, hosts };
}

/** The parsed imports of a module's source, or a coded error naming what is wrong. */
export function parseImports(
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
export function rewriteImports(
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
 * Parses a source module's imports (once) and rewrites them; a source module may import host
 * modules, private ones included, and other source modules.
 * @throws BridgeError `bridge/invalid-module` when it does not parse or imports an unknown module.
 */
export function prepareSourceModule(
  registry: ModuleRegistry,
  entry: SourceModuleEntry,
): { code: string; imports: string[] } {
  if (entry.prepared) return entry.prepared;
  const what = `Source module "${entry.specifier}"`;
  const { imports } = parseImports(entry.source, what, "bridge/invalid-module");
  const targets: string[] = [];
  const code = rewriteImports(entry.source, imports, what, "bridge/invalid-module", (spec) => {
    const target = registry.bySpecifier.get(spec);
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
