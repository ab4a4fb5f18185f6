// Checks the versions this starter supports before `pnpm test` and `pnpm dev` run, and says what to
// change when one is too old. The same minimums are listed in README.md.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/** The oldest versions durablekit is tested with. */
export const SUPPORTED = {
  node: "22.12.0",
  wrangler: "4.156.2",
  "@cloudflare/workers-types": "5.20261103.1",
  compatibilityDate: "2026-11-01",
};

/** Compares dotted numeric versions: negative, zero or positive like a sort comparator. */
function compareVersions(a, b) {
  const [x, y] = [a, b].map((v) => v.split("-")[0].split(".").map(Number));
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

const require = createRequire(import.meta.url);
const installed = (name) => require(`${name}/package.json`).version;

const problems = [];
const node = process.versions.node;
if (compareVersions(node, SUPPORTED.node) < 0) {
  problems.push(
    `Node ${node} runs the scripts; wrangler and vitest need Node >= ${SUPPORTED.node}. ` +
      "Run them through npm run / npm test (or pnpm), which put the `node` devDependency (Node 22) first on PATH.",
  );
}
for (const name of ["wrangler", "@cloudflare/workers-types"]) {
  const version = installed(name);
  if (compareVersions(version, SUPPORTED[name]) < 0) {
    problems.push(
      `${name} ${version} is installed; durablekit needs ${name} >= ${SUPPORTED[name]}.`,
    );
  }
}
const wranglerConfig = readFileSync(new URL("../wrangler.jsonc", import.meta.url), "utf8");
const date = /"compatibility_date"\s*:\s*"(\d{4}-\d{2}-\d{2})"/.exec(wranglerConfig)?.[1];
if (date === undefined) {
  problems.push('wrangler.jsonc has no "compatibility_date": "YYYY-MM-DD".');
} else if (date < SUPPORTED.compatibilityDate) {
  problems.push(
    `wrangler.jsonc's compatibility_date ${date} is older than ${SUPPORTED.compatibilityDate}, the oldest durablekit supports.`,
  );
}
// The tests run test/wrangler.jsonc (the same Worker plus a test-only object): same date, or the
// tests would not run what you deploy.
const testConfig = readFileSync(new URL("../test/wrangler.jsonc", import.meta.url), "utf8");
const testDate = /"compatibility_date"\s*:\s*"(\d{4}-\d{2}-\d{2})"/.exec(testConfig)?.[1];
if (date !== undefined && testDate !== date) {
  problems.push(
    `test/wrangler.jsonc's compatibility_date ${testDate ?? "(none)"} is not wrangler.jsonc's ${date}; keep them equal.`,
  );
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`✗ ${problem}`);
  process.exit(1);
}
