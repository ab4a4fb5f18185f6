// Copies examples/starter, the project `npm create durablekit` writes, into dist/template: the
// starter in the repository is the template's one source, tested there with its own tests.
import { cpSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const starter = fileURLToPath(new URL("../../../examples/starter/", import.meta.url));
const template = fileURLToPath(new URL("../dist/template/", import.meta.url));

/** What a run of the starter leaves behind, never part of a new project. */
const LEFT_BEHIND =
  /[\\/](node_modules|\.wrangler|\.dev-state|pnpm-lock\.yaml|package-lock\.json)$/;

rmSync(template, { recursive: true, force: true });
cpSync(starter, template, { recursive: true, filter: (path) => !LEFT_BEHIND.test(path) });
