import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** A package of the workspace, as its package.json describes it. */
export interface WorkspacePackage {
  /** Its directory from the repository root (`packages/tasks`). */
  readonly dir: string;
  readonly name: string;
  readonly version: string;
  /** True for a package that is never packed or published. */
  readonly private: boolean;
  /** The `@durablekit` packages it needs installed: dependencies and required peers. */
  readonly needs: readonly string[];
}

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** The folders pnpm-workspace.yaml names; `bench` is one package, the rest hold one per folder. */
const WORKSPACE_DIRS = ["packages", "apps", "tools"] as const;

/** Every package of the workspace under `root`, public and private, sorted by name. */
export function workspacePackages(root: string): WorkspacePackage[] {
  const dirs = [
    ...WORKSPACE_DIRS.flatMap((parent) =>
      readdirSync(join(root, parent), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => `${parent}/${entry.name}`),
    ),
    "bench",
  ];
  return dirs
    .map((dir) => {
      const manifest = JSON.parse(
        readFileSync(join(root, dir, "package.json"), "utf8"),
      ) as Manifest;
      const optional = (name: string) => manifest.peerDependenciesMeta?.[name]?.optional === true;
      const needs = [
        ...Object.keys(manifest.dependencies ?? {}),
        ...Object.keys(manifest.peerDependencies ?? {}).filter((name) => !optional(name)),
      ].filter((name) => name.startsWith("@durablekit/"));
      return {
        dir,
        name: manifest.name,
        version: manifest.version,
        private: manifest.private === true,
        needs: [...new Set(needs)].sort(),
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The packages published to npm: every workspace package not marked private. */
export function publicPackages(root: string): WorkspacePackage[] {
  return workspacePackages(root).filter((pkg) => !pkg.private);
}

/**
 * The packages whose tarballs installing `name` from tarballs alone takes: itself and, transitively,
 * every `@durablekit` dependency and required peer, in name order.
 */
export function tarballsFor(name: string, packages: readonly WorkspacePackage[]): string[] {
  const byName = new Map(packages.map((pkg) => [pkg.name, pkg]));
  const found = new Set<string>();
  const visit = (next: string) => {
    if (found.has(next)) return;
    found.add(next);
    for (const need of byName.get(next)?.needs ?? []) visit(need);
  };
  visit(name);
  return [...found].sort();
}
