import { BridgeError } from "./errors";
import { RUNNER_SOURCE, RUNTIME_SOURCE, shimSource } from "./isolate-source";
import {
  type HostModuleEntry,
  type ModuleEntry,
  type ModuleRegistry,
  parseImports,
  prepareSourceModule,
  rewriteImports,
} from "./module-registry";

/** The loader module name of the runner, the isolate's main module. */
export const MAIN_MODULE = "__dk_runner.js";

const shims = new WeakMap<HostModuleEntry, string>();

function shimOf(entry: HostModuleEntry): string {
  let source = shims.get(entry);
  if (source === undefined) {
    source = shimSource(entry.handleId, entry.functions.keys());
    shims.set(entry, source);
  }
  return source;
}

/** Specifiers a program may import, for error messages. */
export function publicSpecifiers(registry: ModuleRegistry): string[] {
  const names: string[] = [];
  for (const entry of registry.bySpecifier.values()) {
    if (entry.kind === "source" || !entry.private) names.push(entry.specifier);
  }
  return names;
}

/**
 * Builds the isolate's module graph for one program: the runner, the runtime, the program (its
 * imports rewritten to loader file names) and every module it reaches, shims for host modules and
 * the prepared text of source modules. Nothing runs here: a program importing a private or
 * unknown module, or using a computed `import()`, is refused with an error naming it.
 * @throws BridgeError `bridge/module-not-found`, `bridge/module-private`, `bridge/invalid-program`, `bridge/invalid-module`.
 */
export function buildModuleGraph(
  registry: ModuleRegistry,
  program: string,
): Record<string, string> {
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
      for (const spec of prepareSourceModule(registry, entry).imports) {
        const target = registry.bySpecifier.get(spec);
        if (target) visit(target);
      }
    }
  };
  const code = rewriteImports(program, imports, what, "bridge/invalid-program", (spec) => {
    const entry = registry.bySpecifier.get(spec);
    if (!entry) {
      const available = publicSpecifiers(registry);
      throw new BridgeError(
        "bridge/module-not-found",
        `The program imports "${spec}", which is not available to programs. ${available.length > 0 ? `It may import: ${available.join(", ")}.` : "No modules are configured."}`,
      );
    }
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
    modules[entry.file] =
      entry.kind === "host" ? shimOf(entry) : prepareSourceModule(registry, entry).code;
  }
  return modules;
}
