import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startWranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { childEnv, pnpm, run } from "../src/commands.ts";
import { LocalRegistry, type PublishedManifest } from "../src/local-registry.ts";

const root = resolve(import.meta.dirname, "../../..");
const starter = join(root, "examples/starter");

/** Every public package, by directory under packages/. */
const PACKAGES = [
  "compose",
  "handle-journal",
  "rpc-bridge",
  "tasks",
  "streams",
  "sse",
  "chat-adapter",
  "inspect",
] as const;

const manifestOf = (dir: string): PublishedManifest =>
  JSON.parse(
    readFileSync(join(root, "packages", dir, "package.json"), "utf8"),
  ) as PublishedManifest;

const versionOf = (dir: string): string => manifestOf(dir).version;

/** The @durablekit packages a package needs at run time: its dependencies and peers. */
const siblingsOf = (dir: string): string[] =>
  Object.keys({ ...manifestOf(dir).dependencies, ...manifestOf(dir).peerDependencies })
    .filter((name) => name.startsWith("@durablekit/"))
    .map((name) => name.slice("@durablekit/".length));

/**
 * Loaded with `node --import`: maps `cloudflare:*` (the Workers runtime's own modules, which only
 * workerd provides) to stand-ins, so plain Node can import a package and resolve everything else
 * through the installed tree.
 */
const WORKERS_RUNTIME_STUB = `import { registerHooks } from "node:module";
const stub = "data:text/javascript,export class RpcTarget {} export class WorkerEntrypoint {} export class DurableObject {} export const env = {};";
registerHooks({
  resolve(specifier, context, next) {
    return specifier.startsWith("cloudflare:") ? { url: stub, shortCircuit: true } : next(specifier, context);
  },
});
`;

let registry: LocalRegistry;
let env: NodeJS.ProcessEnv;
const scratch: string[] = [];

function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

beforeAll(async () => {
  registry = await LocalRegistry.start();
  env = childEnv({ npm_config_userconfig: registry.npmrc });
});

beforeEach((context) => {
  // A failed install often means the registry could not reach upstream: show what it said.
  context.onTestFailed(() => {
    console.error(`--- verdaccio ---\n${registry.output()}`);
  });
});

afterAll(async () => {
  await registry?.stop();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("a release installed from a registry", () => {
  it("publishes every public package at its version with the repository's release command", async () => {
    await pnpm(["run", "release", "--no-git-tag"], { cwd: root, env, timeoutMs: 180_000 });
    for (const dir of PACKAGES) {
      const published = await registry.versions(`@durablekit/${dir}`);
      expect(Object.keys(published)).toEqual([versionOf(dir)]);
      // Sibling ranges are published as plain ranges that accept every later 0.x minor.
      const manifest = published[versionOf(dir)]!;
      for (const sibling of siblingsOf(dir)) {
        const range = { ...manifest.dependencies, ...manifest.peerDependencies }[
          `@durablekit/${sibling}`
        ];
        expect(range, `${dir} → ${sibling}`).toBe(">=0.1.0 <1");
      }
    }
  });

  it("installs the starter from the registry with no workspace link, passes its tests and serves under wrangler dev", async () => {
    const project = scratchDir("dk-starter-");
    cpSync(starter, project, {
      recursive: true,
      filter: (path) => !/[\\/](node_modules|\.wrangler|pnpm-lock\.yaml)$/.test(path),
    });
    await pnpm(["install", "--no-frozen-lockfile"], { cwd: project, env, timeoutMs: 180_000 });

    const lockfile = readFileSync(join(project, "pnpm-lock.yaml"), "utf8");
    expect(lockfile).not.toMatch(/workspace:|link:/);
    for (const dir of ["compose", "tasks", "streams", "sse", "testing"]) {
      expect(lockfile).toContain(`'@durablekit/${dir}@${versionOf(dir)}':`);
    }

    await pnpm(["run", "typecheck"], { cwd: project, env, timeoutMs: 60_000 });
    const tested = await pnpm(["test"], { cwd: project, env, timeoutMs: 120_000 });
    expect(tested).toMatch(/Tests\s+3 passed/);

    const dev = await startWranglerDev({ cwd: project, readyPath: "/" });
    try {
      const started = await fetch(`${dev.url}/count`, {
        method: "POST",
        body: JSON.stringify({ steps: 2 }),
      });
      expect(started.status).toBe(202);
      expect(await started.json()).toMatchObject({ stream: expect.stringMatching(/^count:/) });
    } finally {
      await dev.dispose();
    }
  });

  it.each(PACKAGES)(
    "installs @durablekit/%s alone from the registry, with everything it imports",
    async (dir) => {
      const project = scratchDir(`dk-alone-${dir}-`);
      writeFileSync(
        join(project, "package.json"),
        `${JSON.stringify({ name: "alone", private: true, type: "module" })}\n`,
      );
      writeFileSync(join(project, "workers-runtime-stub.mjs"), WORKERS_RUNTIME_STUB);
      await pnpm(["add", `@durablekit/${dir}`], { cwd: project, env, timeoutMs: 120_000 });

      const lockfile = readFileSync(join(project, "pnpm-lock.yaml"), "utf8");
      expect(lockfile).not.toMatch(/workspace:|link:/);
      // The tarball stands alone: licence, registry-safe README links, maps whose sources it ships.
      const installed = join(project, "node_modules", "@durablekit", dir);
      for (const file of [
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        "dist/index.js",
        "dist/index.d.ts",
      ]) {
        expect(existsSync(join(installed, file)), file).toBe(true);
      }
      expect(readFileSync(join(installed, "README.md"), "utf8")).not.toMatch(
        /\]\((?!https:|#)[^)\s]+\)/,
      );
      for (const map of ["dist/index.js.map", "dist/index.d.ts.map"]) {
        const { sources } = JSON.parse(readFileSync(join(installed, map), "utf8")) as {
          sources: string[];
        };
        expect(sources.length, map).toBeGreaterThan(0);
        for (const source of sources) {
          expect(existsSync(join(installed, "dist", source)), `${map} → ${source}`).toBe(true);
        }
      }
      const imported = await run(
        process.execPath,
        [
          "--import",
          "./workers-runtime-stub.mjs",
          "--input-type=module",
          "-e",
          `const m = await import("@durablekit/${dir}"); console.log(Object.keys(m).length);`,
        ],
        { cwd: project, env, timeoutMs: 30_000 },
      );
      expect(Number(imported.trim())).toBeGreaterThan(0);
    },
  );
});
