import type { BridgeAccess } from "../context";
import { BridgeError } from "../errors";
import { methodsOf } from "../run/handle-table";
import { ModuleRegistry } from "./module-registry";
import type { BridgeClassDescription, BridgeModuleMap } from "./modules";
import { isReadOnly } from "./read-only";

/** Options of {@link describeModules}. */
export interface BridgeDescribeOptions {
  /** With `"read"`, functions and methods that are not read-only are left out. Default `"read-write"`. */
  access?: BridgeAccess;
}

const UNKNOWN_SIGNATURE = "(...args: unknown[]): Promise<unknown>";

function comment(text: string | undefined, indent: string): string[] {
  if (!text) return [];
  // A description never ends its doc comment early: `*/` inside it is written `*\/`.
  const lines = text.trim().replaceAll("*/", "*\\/").split("\n");
  if (lines.length === 1) return [`${indent}/** ${lines[0]} */`];
  return [`${indent}/**`, ...lines.map((line) => `${indent} * ${line}`), `${indent} */`];
}

function normalizeClass(
  value: BridgeClassDescription | (abstract new (...args: never[]) => object),
): BridgeClassDescription {
  return typeof value === "function" ? { class: value } : value;
}

function classLines(
  name: string,
  description: BridgeClassDescription,
  access: BridgeAccess,
): string[] {
  const proto = description.class?.prototype as Record<string, unknown> | undefined;
  const names = new Set<string>(Object.keys(description.methods ?? {}));
  if (proto) for (const method of methodsOf(Object.create(proto))) names.add(method);
  const lines = [...comment(description.description, "  "), `  export interface ${name} {`];
  for (const method of names) {
    const readOnly = proto ? isReadOnly(proto[method]) : false;
    if (access === "read" && !readOnly) continue;
    const signature = description.methods?.[method] ?? UNKNOWN_SIGNATURE;
    lines.push(`    ${method}${signature};${readOnly ? " // read-only" : ""}`);
  }
  lines.push(
    "    /** Releases the object in the host now; it is released anyway when the run ends. */",
  );
  lines.push("    [Symbol.dispose](): void;");
  lines.push("  }");
  return lines;
}

/**
 * Renders TypeScript declarations of everything a program may import: one `declare module` per
 * host module (its functions, and the interfaces of the objects they return, from the module's
 * {@link hostModule} description) and per source module, each with its description. Private
 * modules are left out. This is the text a host puts in a model's prompt.
 * @throws BridgeError `bridge/invalid-module` for a malformed `modules` map, `bridge/invalid-argument` for a non-object.
 */
export function describeModules(
  modules: BridgeModuleMap,
  options: BridgeDescribeOptions = {},
): string {
  if (
    typeof modules !== "object" ||
    modules === null ||
    typeof options !== "object" ||
    options === null
  ) {
    throw new BridgeError(
      "bridge/invalid-argument",
      "describeModules takes the executor's modules object and optional { access }.",
    );
  }
  const access = options.access ?? "read-write";
  const registry = new ModuleRegistry(modules);
  const out = [
    "// A program is an ES module whose default export runs it: export default async function (input) { … }.",
    "// It has no network access and no bindings; it reaches the host only through these modules.",
    "// Every function and method returns a Promise; objects they return may be released early with `using`.",
  ];
  if (access === "read")
    out.push("// This run is read-only: only read-only functions and methods are listed.");
  for (const entry of registry.bySpecifier.values()) {
    out.push("");
    if (entry.kind === "source") {
      out.push(
        ...comment(entry.description, ""),
        `declare module ${JSON.stringify(entry.specifier)} {`,
      );
      out.push(
        ...(entry.declarations ?? "export {};")
          .trim()
          .split("\n")
          .map((line) => `  ${line}`),
      );
      out.push("}");
      continue;
    }
    if (entry.private) {
      out.pop();
      continue;
    }
    const meta = entry.meta;
    out.push(
      ...comment(meta?.description, ""),
      `declare module ${JSON.stringify(entry.specifier)} {`,
    );
    for (const [name, fn] of entry.functions) {
      const readOnly = isReadOnly(fn);
      if (access === "read" && !readOnly) continue;
      const signature = meta?.exports?.[name] ?? UNKNOWN_SIGNATURE;
      out.push(`  export function ${name}${signature};${readOnly ? " // read-only" : ""}`);
    }
    for (const [name, value] of Object.entries(meta?.classes ?? {})) {
      out.push(...classLines(name, normalizeClass(value), access));
    }
    out.push("}");
  }
  return `${out.join("\n")}\n`;
}
