/**
 * Source of the modules the bridge adds to every isolate: the runner (main module), the runtime
 * (the isolate half of the bridge) and one shim per host module. The runner and the runtime are
 * typed modules in src/isolate/, bundled at build time (scripts/build-isolate.mjs). The runtime is
 * the only holder of the bridge stub; programs cannot import it (their imports are checked and
 * rewritten).
 */
export { RUNNER_SOURCE, RUNTIME_SOURCE } from "./isolate-bundle.generated";

/** The shim of a host module: one export per function, each calling through the runtime. */
export function shimSource(handleId: number, exportNames: Iterable<string>): string {
  const lines = ['import { fn } from "./__dk_runtime.js";'];
  let index = 0;
  for (const name of exportNames) {
    lines.push(`const f${index} = fn(${handleId}, ${JSON.stringify(name)});`);
    lines.push(`export { f${index} as ${name} };`);
    index++;
  }
  return lines.join("\n");
}
