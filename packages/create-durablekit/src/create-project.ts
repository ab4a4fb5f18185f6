import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateError } from "./errors";

/** The package managers whose commands the next steps are printed in. */
export type CreatePackageManager = "npm" | "pnpm" | "yarn";

/** Options of {@link createProject}. */
export interface CreateOptions {
  /** The folder to create, absolute or relative to `cwd`; its name becomes the package's name. */
  directory: string;
  /** The folder `directory` is relative to. Default: `process.cwd()`. */
  cwd?: string;
  /** Whose commands the next steps are. Default: `"npm"`. */
  packageManager?: CreatePackageManager;
  /** The project to copy. Default: the starter shipped in this package (`dist/template`). */
  templateDir?: string;
}

/** What {@link createProject} wrote. */
export interface CreateResult {
  /** The folder, absolute. */
  directory: string;
  /** The package's name (the folder's name). */
  name: string;
  /** Every file written, relative to `directory`, `/`-separated, in name order. */
  files: string[];
  /** The two commands to run next: into the folder, then install and test. */
  next: [string, string];
}

/** npm's rules for a new, unscoped package name. */
const PACKAGE_NAME = /^[a-z0-9][a-z0-9._-]*$/;
const MAX_NAME_LENGTH = 214;

/** What the project's git leaves out; npm never packs a `.gitignore`, so the file is written here. */
const GITIGNORE = "node_modules/\n.wrangler/\n.dev-state/\n*.log\n";

/** The commands of each package manager: install, then test (the starter's workerd and crash tests). */
const INSTALL_AND_TEST: Record<CreatePackageManager, string> = {
  npm: "npm install && npm test",
  pnpm: "pnpm install && pnpm test",
  yarn: "yarn install && yarn test",
};

/**
 * Writes the starter project into a new folder: every file of the template, the package's name set
 * to the folder's, and a `.gitignore`. Writes nowhere else and runs nothing (no install, no git):
 * the next steps are returned for the caller to print.
 *
 * @throws CreateError `create/invalid-argument` when the folder's name cannot be a package name,
 *   `create/conflict` when the folder exists and holds anything but `.git`; nothing was written.
 */
export function createProject(options: CreateOptions): CreateResult {
  const cwd = options.cwd ?? process.cwd();
  const directory = resolve(cwd, options.directory);
  const name = basename(directory);
  if (!PACKAGE_NAME.test(name) || name.length > MAX_NAME_LENGTH) {
    throw new CreateError(
      "create/invalid-argument",
      `"${name}" cannot be a package name. Name the folder with lowercase letters, digits, "-", "." and "_", e.g. npm create durablekit@latest my-app.`,
    );
  }
  if (existsSync(directory)) {
    const taken =
      !statSync(directory).isDirectory() ||
      readdirSync(directory).some((entry) => entry !== ".git");
    if (taken) {
      throw new CreateError(
        "create/conflict",
        `${directory} exists and is not empty. Name a new folder, or empty this one first; nothing was written.`,
      );
    }
  }

  const templateDir = options.templateDir ?? fileURLToPath(new URL("./template/", import.meta.url));
  const files = templateFiles(templateDir);
  for (const file of files) {
    const target = join(directory, file);
    // Every path comes from listing the template, so it stays inside the folder; checked anyway.
    if (!isInside(directory, target)) throw new Error(`template path escapes the folder: ${file}`);
    mkdirSync(dirname(target), { recursive: true });
    const text = readFileSync(join(templateDir, file));
    const content = file === "package.json" ? withName(text.toString("utf8"), name) : text;
    writeFileSync(target, content, { flag: "wx" });
  }
  writeFileSync(join(directory, ".gitignore"), GITIGNORE, { flag: "wx" });

  const into = relative(cwd, directory) || ".";
  return {
    directory,
    name,
    files: [...files, ".gitignore"].sort(),
    next: [
      `cd ${/^[\w./-]+$/.test(into) ? into : JSON.stringify(into)}`,
      INSTALL_AND_TEST[options.packageManager ?? "npm"],
    ],
  };
}

/** The template's files, relative and `/`-separated. */
function templateFiles(templateDir: string): string[] {
  return (
    readdirSync(templateDir, { recursive: true, withFileTypes: true }) as import("node:fs").Dirent[]
  )
    .filter((entry) => entry.isFile())
    .map((entry) => relative(templateDir, join(entry.parentPath, entry.name)).split(sep).join("/"))
    .sort();
}

/** The template's package.json with the project's name; key order and formatting kept. */
function withName(packageJson: string, name: string): string {
  const manifest = JSON.parse(packageJson) as Record<string, unknown>;
  return `${JSON.stringify({ ...manifest, name }, null, 2)}\n`;
}

function isInside(directory: string, path: string): boolean {
  const rel = relative(directory, path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
}
