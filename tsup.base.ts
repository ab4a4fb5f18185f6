import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { rollup } from "rollup";
import { dts } from "rollup-plugin-dts";
import { defineConfig } from "tsup";

/**
 * The build every published package shares: `dist/index.js` (one ESM bundle) with its source map, and
 * `dist/index.d.ts` (one bundled declaration file) with its declaration map, both pointing into the
 * package's shipped `src/` — and the same for each other entry a package names (a subpath export,
 * e.g. `src/otel.ts` → `dist/otel.js`). tsup's own `dts` bundler turns declaration maps off, so
 * declarations are bundled here by rollup-plugin-dts after the JavaScript build.
 */
export function packageBuild(
  options: {
    entries?: readonly string[];
    /**
     * Third-party modules bundled into the package's JavaScript instead of depended on, so that the
     * package installs with its @durablekit siblings alone (their licences are in the package's
     * THIRD_PARTY_NOTICES.md).
     */
    bundled?: readonly string[];
  } = {},
): ReturnType<typeof defineConfig> {
  const entries = options.entries ?? ["index"];
  return defineConfig({
    entry: entries.map((entry) => `src/${entry}.ts`),
    format: ["esm"],
    dts: false,
    sourcemap: true,
    clean: true,
    target: "es2023",
    external: [/^cloudflare:/],
    noExternal: [...(options.bundled ?? [])],
    onSuccess: async () => {
      for (const entry of entries) {
        vendorMappedSources(entry);
        await bundleDeclarations(entry);
      }
    },
  });
}

/**
 * A bundled third-party module's sources are files of `node_modules`, which the package does not
 * ship: each is copied to `dist/vendor/<its path below node_modules>` and the entry's source map
 * points there, so every source a shipped map names is shipped with it.
 */
function vendorMappedSources(entry: string): void {
  const mapFile = `dist/${entry}.js.map`;
  const map = JSON.parse(readFileSync(mapFile, "utf8")) as { sources: string[] };
  let changed = false;
  map.sources = map.sources.map((source) => {
    const below = /(?:^|\/)node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?(.+)$/.exec(source)?.[1];
    if (below === undefined) return source;
    const vendored = `vendor/${below}`;
    mkdirSync(dirname(`dist/${vendored}`), { recursive: true });
    copyFileSync(join("dist", source), `dist/${vendored}`);
    changed = true;
    return vendored;
  });
  if (changed) writeFileSync(mapFile, JSON.stringify(map));
}

/** Bundles `src/<entry>.ts`'s declarations into `dist/<entry>.d.ts` + its declaration map. */
async function bundleDeclarations(entry: string): Promise<void> {
  const bundle = await rollup({
    input: `src/${entry}.ts`,
    plugins: [dts({ tsconfig: "tsconfig.json", sourcemap: true })],
    // Only the package's own modules are bundled; every bare specifier stays an import.
    external: (id, _importer, isResolved) => !isResolved && !id.startsWith(".") && !isAbsolute(id),
  });
  try {
    await bundle.write({ file: `dist/${entry}.d.ts`, format: "es", sourcemap: true });
  } finally {
    await bundle.close();
  }
}
