// `pnpm check` (this package's typecheck): every TypeScript block of docs/ and of the READMEs
// compiles as pasted into a Worker project, against the Env the guides document
// (snippets/env.d.ts); a block marked ```ts partial is left out. Exits 1 and prints each error at
// its line in its guide.
import { fileURLToPath } from "node:url";
import { checkSnippets, documentedGuides } from "./snippet-check.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const projectDir = fileURLToPath(new URL("..", import.meta.url));

const report = checkSnippets(documentedGuides(root), {
  projectDir,
  declarations: [`${projectDir}snippets/env.d.ts`],
});
for (const problem of report.problems) {
  console.error(`${problem.guide}:${problem.line}: ${problem.message}`);
}
console.info(
  `snippets: ${report.checked} compiled, ${report.partial} marked partial, ${report.problems.length} errors`,
);
if (report.problems.length > 0) process.exit(1);
