import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, startWranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { childEnv, npm, pnpm, run, serve } from "../src/commands.ts";
import { LocalRegistry, type PublishedManifest } from "../src/local-registry.ts";
import { publicPackages, workspacePackages } from "../src/workspace.ts";

const root = resolve(import.meta.dirname, "../../..");
const starter = join(root, "examples/starter");

/** Every public package, by directory under packages/, derived from the workspace. */
const PACKAGES = publicPackages(root).map((pkg) => pkg.dir.slice("packages/".length));

const nameOf = (dir: string): string =>
  JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")).name as string;

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
// @durablekit/testing imports the vitest plugin's helpers, which only its workerd pool provides.
const testStub = "data:text/javascript,export const env = {}; export const SELF = {}; export function runInDurableObject() {} export function runDurableObjectAlarm() {} export function evictDurableObject() {} export function abortAllDurableObjects() {}";
registerHooks({
  resolve(specifier, context, next) {
    if (specifier === "cloudflare:test") return { url: testStub, shortCircuit: true };
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
    expect(PACKAGES).toEqual(expect.arrayContaining(["create-durablekit", "inspect", "testing"]));
    for (const dir of PACKAGES) {
      expect(versionOf(dir), `${dir} is released at a real version`).not.toBe("0.0.0");
      const published = await registry.versions(nameOf(dir));
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
    // Private packages are never published, even under the scope the registry keeps locally.
    for (const pkg of workspacePackages(root).filter((p) => p.private)) {
      expect(await registry.versions(pkg.name), pkg.name).toEqual({});
    }
  });

  it("packs every public package and no private one with pnpm tarballs, which install from the README's line with no registry", async () => {
    const tarballs = join(root, "tarballs");
    try {
      await pnpm(["run", "tarballs"], { cwd: root, env, timeoutMs: 180_000 });
      const expected = publicPackages(root).map(
        (pkg) => `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`,
      );
      expect(readdirSync(tarballs).sort()).toEqual(expected.sort());

      // The README's tarball line installs with no registry at all (npm offline): every
      // @durablekit package the four need is among the tarballs it names.
      const line = /^npm install \.\/durablekit-\{[^}]+\}-\*\.tgz$/m.exec(
        readFileSync(join(root, "README.md"), "utf8"),
      )?.[0];
      expect(line, "README.md's tarball install line").toBeDefined();
      const project = scratchDir("dk-tarballs-");
      writeFileSync(
        join(project, "package.json"),
        `${JSON.stringify({ name: "from-tarballs", private: true, type: "module" })}\n`,
      );
      cpSync(tarballs, project, { recursive: true });
      await run("bash", ["-euo", "pipefail", "-c", line!], {
        cwd: project,
        env: { ...env, npm_config_offline: "true" },
        timeoutMs: 120_000,
      });
      for (const dir of ["compose", "handle-journal", "tasks", "streams", "sse"]) {
        const installed = JSON.parse(
          readFileSync(join(project, "node_modules/@durablekit", dir, "package.json"), "utf8"),
        ) as { version: string };
        expect(installed.version, dir).toBe(versionOf(dir));
      }
    } finally {
      rmSync(tarballs, { recursive: true, force: true });
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
    expect(tested).toMatch(/Tests\s+4 passed/);

    let dev = await startWranglerDev({ cwd: project, readyPath: "/" });
    try {
      const started = await fetch(`${dev.url}/count`, {
        method: "POST",
        body: JSON.stringify({ steps: 2 }),
      });
      expect(started.status).toBe(202);
      expect(await started.json()).toMatchObject({ stream: expect.stringMatching(/^count:/) });

      // Every default: a run cut mid-step by a SIGKILL resumes after the restart's first request,
      // and no step runs more than twice.
      type Status = { state: string; steps: { name: string; state: string; attempt: number }[] };
      const statusOf = async (runId: string): Promise<Status> =>
        (await (await fetch(`${dev.url}/count/${runId}`)).json()) as Status;
      const slow = (await (
        await fetch(`${dev.url}/count`, {
          method: "POST",
          body: JSON.stringify({ steps: 3, delayMs: 1_500 }),
        })
      ).json()) as { runId: string };
      for (let i = 0; ; i++) {
        const status = await statusOf(slow.runId);
        if (status.steps.some((s) => s.name === "chunk-0" && s.state === "completed")) break;
        if (i > 100) throw new Error(`chunk-0 never completed: ${JSON.stringify(status)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // chunk-1 is in flight (it waits 1.5 s before its append).
      await dev.kill();
      dev = await dev.restart();
      const restarted = Date.now();
      expect((await statusOf(slow.runId)).state).toBe("running");
      // chunk-1 again and chunk-2 take 3 s; recovery adds about a second, not a claim deadline.
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      const after = await statusOf(slow.runId);
      expect(after.state, `${Date.now() - restarted} ms after the restart`).toBe("completed");
      expect(after.steps.map((s) => s.name)).toEqual(["chunk-0", "chunk-1", "chunk-2", "close"]);
      for (const step of after.steps) expect(step.attempt, step.name).toBeLessThanOrEqual(2);
    } finally {
      await dev.dispose();
    }
  });

  it("creates a project with npm create durablekit on the machine's Node, installs it with npm, passes its tests and serves under npm run dev", async () => {
    const parent = scratchDir("dk-npm-create-");
    // The machine's Node and npm, as a user has them (no node_modules/.bin of this repository).
    const machine = await run("node", ["--version"], { cwd: parent, env, timeoutMs: 10_000 });
    console.info(
      `npm ${(await npm(["--version"], { cwd: parent, env, timeoutMs: 30_000 })).trim()} on Node ${machine.trim()}`,
    );
    // A cache of its own: npx keeps what it installed for a spec under the cache, and a release
    // republished here under the same version must not meet an older install of it.
    const created = await npm(["create", "durablekit@latest", "my-app"], {
      cwd: parent,
      env: { ...env, npm_config_yes: "true", npm_config_cache: scratchDir("dk-npm-cache-") },
      timeoutMs: 120_000,
    });
    expect(created).toContain("  cd my-app\n  npm install && npm test\n");
    const project = join(parent, "my-app");
    expect(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).name).toBe("my-app");

    const installed = await npm(["install", "--no-audit", "--no-fund"], {
      cwd: project,
      env,
      timeoutMs: 300_000,
    });
    // The starter's allowScripts covers every install script its tools have: npm 11 warns of none.
    expect(installed).not.toContain("not yet covered by allowScripts");
    const lock = JSON.parse(readFileSync(join(project, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string; link?: boolean }>;
    };
    for (const dir of ["compose", "tasks", "streams", "sse", "testing"]) {
      const entry = lock.packages[`node_modules/@durablekit/${dir}`];
      expect(entry, dir).toMatchObject({ version: versionOf(dir) });
      expect(entry?.link, dir).toBeUndefined();
    }
    // The tools npm chose run the supported date: wrangler within ^4.156, Node 22 for the scripts.
    expect(lock.packages["node_modules/wrangler"]?.version).toMatch(
      /^4\.(15[6-9]|1[6-9]\d|[2-9]\d\d)\./,
    );
    expect(lock.packages["node_modules/node"]?.version).toMatch(/^22\./);

    const tested = await npm(["test"], { cwd: project, env, timeoutMs: 240_000 });
    expect(tested).toMatch(/Tests\s+4 passed/);

    const port = await freePort();
    const persist = scratchDir("dk-npm-dev-");
    const dev = await serve(
      "npm",
      [
        "run",
        "dev",
        "--",
        "--ip",
        "127.0.0.1",
        "--port",
        String(port),
        "--persist-to",
        persist,
        "--inspector-port",
        String(await freePort()),
        "--show-interactive-dev-session=false",
      ],
      {
        cwd: project,
        env: { ...env, CI: "true" },
        url: `http://127.0.0.1:${port}/`,
        timeoutMs: 120_000,
      },
    );
    try {
      const started = await fetch(`http://127.0.0.1:${port}/count`, {
        method: "POST",
        body: JSON.stringify({ steps: 2 }),
      });
      expect(started.status, dev.output()).toBe(202);
      expect(await started.json()).toMatchObject({ stream: expect.stringMatching(/^count:/) });
    } finally {
      await dev.stop();
    }
  });

  it("installs the README's npm install lines into an empty Worker project and typechecks the getting-started object against wrangler types", async () => {
    const project = scratchDir("dk-npm-readme-");
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const install =
      /```sh no-run\n(npm install @durablekit\/[^\n]*\nnpm install -D [^\n]*)\n```/.exec(
        readme,
      )?.[1];
    expect(install, "README.md's npm install block").toBeDefined();
    const guide = readFileSync(join(root, "docs/getting-started.md"), "utf8");
    const object =
      /```ts\n(import \{ DurableObject \}[\s\S]*?export class MyObject[\s\S]*?)```/.exec(
        guide,
      )?.[1];
    expect(object, "docs/getting-started.md's object").toBeDefined();

    writeFileSync(
      join(project, "package.json"),
      `${JSON.stringify({ name: "readme-install", private: true, type: "module" }, null, 2)}\n`,
    );
    writeFileSync(
      join(project, "wrangler.jsonc"),
      `${JSON.stringify(
        {
          name: "readme-install",
          main: "src/index.ts",
          compatibility_date: "2026-11-01",
          compatibility_flags: ["nodejs_compat"],
          durable_objects: { bindings: [{ name: "MY_OBJECT", class_name: "MyObject" }] },
          migrations: [{ tag: "v1", new_sqlite_classes: ["MyObject"] }],
        },
        null,
        2,
      )}\n`,
    );
    writeFileSync(
      join(project, "tsconfig.json"),
      `${JSON.stringify(
        {
          compilerOptions: {
            target: "ES2023",
            lib: ["ES2023"],
            module: "ESNext",
            moduleResolution: "Bundler",
            strict: true,
            noUncheckedIndexedAccess: true,
            verbatimModuleSyntax: true,
            skipLibCheck: true,
            noEmit: true,
            types: ["@cloudflare/workers-types"],
          },
          include: ["src", "worker-configuration.d.ts"],
        },
        null,
        2,
      )}\n`,
    );
    mkdirSync(join(project, "src"));
    writeFileSync(join(project, "src/my-object.ts"), object!);
    writeFileSync(
      join(project, "src/index.ts"),
      `export { MyObject } from "./my-object";\n\nexport default {\n  fetch: () => new Response(null, { status: 404 }),\n} satisfies ExportedHandler<Env>;\n`,
    );

    const output = await run("bash", ["-euo", "pipefail", "-c", install!], {
      cwd: project,
      env,
      timeoutMs: 300_000,
    });
    // The warning the README explains, for the packages it names.
    expect(output).toContain("not yet covered by allowScripts");
    for (const name of ["node", "esbuild", "workerd"]) expect(output).toContain(`  ${name}@`);
    await npm(["exec", "--", "wrangler", "types", "--include-runtime=false"], {
      cwd: project,
      env,
      timeoutMs: 60_000,
    });
    expect(readFileSync(join(project, "worker-configuration.d.ts"), "utf8")).toContain("MY_OBJECT");
    await npm(["exec", "--", "tsc", "--noEmit"], { cwd: project, env, timeoutMs: 120_000 });
  });

  it.each(PACKAGES)(
    "installs %s alone from the registry, with everything it imports",
    async (dir) => {
      const project = scratchDir(`dk-alone-${dir}-`);
      writeFileSync(
        join(project, "package.json"),
        `${JSON.stringify({ name: "alone", private: true, type: "module" })}\n`,
      );
      writeFileSync(join(project, "workers-runtime-stub.mjs"), WORKERS_RUNTIME_STUB);
      await pnpm(["add", nameOf(dir)], { cwd: project, env, timeoutMs: 120_000 });

      const lockfile = readFileSync(join(project, "pnpm-lock.yaml"), "utf8");
      expect(lockfile).not.toMatch(/workspace:|link:/);
      // The tarball stands alone: licence, registry-safe README links, maps whose sources it ships.
      const installed = join(project, "node_modules", nameOf(dir));
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
          `const m = await import("${nameOf(dir)}"); console.log(Object.keys(m).length);`,
        ],
        { cwd: project, env, timeoutMs: 30_000 },
      );
      expect(Number(imported.trim())).toBeGreaterThan(0);
    },
  );
});
