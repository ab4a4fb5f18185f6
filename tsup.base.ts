import { isAbsolute } from "node:path";
import { rollup } from "rollup";
import { dts } from "rollup-plugin-dts";
import { defineConfig } from "tsup";

/**
 * The build every published package shares: `dist/index.js` (one ESM bundle) with its source map, and
 * `dist/index.d.ts` (one bundled declaration file) with its declaration map, both pointing into the
 * package's shipped `src/`. tsup's own `dts` bundler turns declaration maps off, so declarations are
 * bundled here by rollup-plugin-dts after the JavaScript build.
 */
export function packageBuild(): ReturnType<typeof defineConfig> {
  return defineConfig({
    entry: ["src/index.ts"],
    format: ["esm"],
    dts: false,
    sourcemap: true,
    clean: true,
    target: "es2023",
    external: [/^cloudflare:/],
    onSuccess: bundleDeclarations,
  });
}

/** Bundles `src/index.ts`'s declarations into `dist/index.d.ts` + `dist/index.d.ts.map`. */
async function bundleDeclarations(): Promise<void> {
  const bundle = await rollup({
    input: "src/index.ts",
    plugins: [dts({ tsconfig: "tsconfig.json", sourcemap: true })],
    // Only the package's own modules are bundled; every bare specifier stays an import.
    external: (id, _importer, isResolved) => !isResolved && !id.startsWith(".") && !isAbsolute(id),
  });
  try {
    await bundle.write({ file: "dist/index.d.ts", format: "es", sourcemap: true });
  } finally {
    await bundle.close();
  }
}
