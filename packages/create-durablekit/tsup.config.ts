import { defineConfig, type Options } from "tsup";
import { packageBuild } from "../../tsup.base";

// `cli` is the bin `npm create durablekit` runs; `index` the same as a function, for scripts. Each is
// one self-contained file (no shared chunk), so each one's source map names the sources it runs.
export default defineConfig({
  ...(packageBuild({ entries: ["index", "cli"] }) as Options),
  splitting: false,
});
