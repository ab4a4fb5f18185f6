import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const here = fileURLToPath(new URL("..", import.meta.url));
const committed = fileURLToPath(new URL("../../../docs/api", import.meta.url));
const typedoc = join(
  createRequire(fileURLToPath(new URL("../../../package.json", import.meta.url))).resolve(
    "typedoc/package.json",
  ),
  "../bin/typedoc",
);

/** Every file under `dir`, by its path relative to `dir`, with its text. */
function tree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(dir, path), readFileSync(path, "utf8"));
  }
  return files;
}

describe("the API reference in docs/api", () => {
  const out = mkdtempSync(join(tmpdir(), "dk-api-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("is what `pnpm docs:api` generates from the packages' TSDoc today", () => {
    execFileSync(
      process.execPath,
      [typedoc, "--options", "typedoc.json", "--out", out, "--logLevel", "Error"],
      {
        cwd: here,
        stdio: "pipe",
      },
    );
    const generated = tree(out);
    const current = tree(committed);
    const stale = [...new Set([...generated.keys(), ...current.keys()])]
      .filter((path) => generated.get(path) !== current.get(path))
      .sort();
    expect(stale, "docs/api is stale: run `pnpm docs:api` and commit docs/api").toEqual([]);
  }, 120_000);
});
