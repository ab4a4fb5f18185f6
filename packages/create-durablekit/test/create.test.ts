import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createProject, isCreateError } from "../src/index";

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const template = fileURLToPath(new URL("../dist/template/", import.meta.url));
const starter = fileURLToPath(new URL("../../../examples/starter/", import.meta.url));

/** The starter's own files, as the repository holds them (what a run leaves behind excluded). */
function starterFiles(): string[] {
  return readdirSync(starter, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(starter, join(entry.parentPath, entry.name)).split(sep).join("/"))
    .filter(
      (file) =>
        !/^(node_modules|\.wrangler|\.dev-state)\/|(^|\/)(pnpm-lock\.yaml|package-lock\.json)$/.test(
          file,
        ),
    )
    .sort();
}

const scratch: string[] = [];
function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "dk-create-"));
  scratch.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs the built bin as `npm create` does: with Node, in `cwd`, as the user agent `agent`. */
function runCli(
  cwd: string,
  args: string[],
  agent = "npm/11.19.1 node/v20.20.2 linux x64 workspaces/false",
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [cli, ...args],
      { cwd, env: { ...process.env, npm_config_user_agent: agent } },
      (error, stdout, stderr) =>
        done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("npm create durablekit", () => {
  it("writes the starter into a new folder named after it, and nothing else, and prints the next two commands", async () => {
    const cwd = scratchDir();
    const { code, stdout } = await runCli(cwd, ["my-app"]);
    expect(code).toBe(0);
    expect(stdout).toContain("Next:\n\n  cd my-app\n  npm install && npm test\n");
    expect(readdirSync(cwd)).toEqual(["my-app"]);

    const project = join(cwd, "my-app");
    const files = starterFiles();
    expect(files).toEqual(
      expect.arrayContaining(["src/counter.ts", "test/crash.test.ts", "wrangler.jsonc"]),
    );
    for (const file of files) {
      const written = readFileSync(join(project, file), "utf8");
      const original = readFileSync(join(starter, file), "utf8");
      if (file === "package.json") {
        expect(JSON.parse(written)).toEqual({ ...JSON.parse(original), name: "my-app" });
      } else {
        expect(written, file).toBe(original);
      }
    }
    expect(readFileSync(join(project, ".gitignore"), "utf8")).toContain("node_modules/");
  });

  it("refuses a folder that is not empty and writes nothing into it", async () => {
    const cwd = scratchDir();
    mkdirSync(join(cwd, "taken"));
    writeFileSync(join(cwd, "taken", "notes.txt"), "mine\n");
    const { code, stderr } = await runCli(cwd, ["taken"]);
    expect(code).toBe(1);
    expect(stderr).toContain("exists and is not empty");
    expect(stderr).toContain("(create/conflict)");
    expect(readdirSync(join(cwd, "taken"))).toEqual(["notes.txt"]);
  });

  it("writes into an empty folder that holds only .git", () => {
    const cwd = scratchDir();
    mkdirSync(join(cwd, "repo", ".git"), { recursive: true });
    const created = createProject({ directory: "repo", cwd, templateDir: template });
    expect(created.files).toContain("src/index.ts");
    expect(readdirSync(join(cwd, "repo"))).toContain("wrangler.jsonc");
  });

  it("refuses a folder name that cannot be a package name, before writing anything", async () => {
    const cwd = scratchDir();
    const { code, stderr } = await runCli(cwd, ["My App"]);
    expect(code).toBe(1);
    expect(stderr).toContain("(create/invalid-argument)");
    expect(readdirSync(cwd)).toEqual([]);
    expect(() => createProject({ directory: "Caps", cwd, templateDir: template })).toThrow(
      expect.objectContaining({ code: "create/invalid-argument", retryable: false }),
    );
  });

  it("asks for a folder when none is named", async () => {
    const { code, stderr } = await runCli(scratchDir(), []);
    expect(code).toBe(1);
    expect(stderr).toContain("npm create durablekit@latest <folder>");
  });

  it("prints pnpm's commands when pnpm runs it", async () => {
    const { stdout } = await runCli(scratchDir(), ["app"], "pnpm/10.34.9 npm/? node/v20.20.2");
    expect(stdout).toContain("  cd app\n  pnpm install && pnpm test\n");
  });

  it("names its errors with isCreateError", () => {
    const cwd = scratchDir();
    writeFileSync(join(cwd, "file"), "");
    try {
      createProject({ directory: "file", cwd, templateDir: template });
      expect.fail("a file in the way was not refused");
    } catch (error) {
      expect(isCreateError(error, "create/conflict")).toBe(true);
      expect(isCreateError(error, "create/invalid-argument")).toBe(false);
    }
  });
});
