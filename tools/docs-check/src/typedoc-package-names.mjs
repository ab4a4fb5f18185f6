// @ts-check
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Converter, ReflectionKind } from "typedoc";

/**
 * Names each module of the API reference after its package (`@durablekit/streams`) instead of its
 * entry point's path (`streams/src`).
 *
 * @param {import("typedoc").Application} app
 */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getReflectionsByKind(ReflectionKind.Module)) {
      const dir = /^([^/]+)\/src$/.exec(module.name)?.[1];
      if (dir === undefined) continue;
      const manifest = join(import.meta.dirname, "../../../packages", dir, "package.json");
      module.name = JSON.parse(readFileSync(manifest, "utf8")).name;
    }
  });
}
