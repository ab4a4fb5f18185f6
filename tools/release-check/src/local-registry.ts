import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { freePort } from "@durablekit/wrangler-harness";

/** The part of a package.json (as published) the test reads. */
export interface PublishedManifest {
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/**
 * What is published to the local registry and never proxied to the public one: the scope, and the
 * unscoped `create-durablekit` that `npm create durablekit` runs.
 */
const LOCAL_ONLY = ["@durablekit/*", "create-durablekit"] as const;

/**
 * A verdaccio npm registry on a free loopback port, with its own config, storage and user config
 * in a temporary directory. `@durablekit/*` and `create-durablekit` live only here (published by the
 * test, never proxied);
 * every other package is proxied from the public registry, so a project's other dependencies
 * install. Stopped by PID, in its own process group.
 */
export class LocalRegistry {
  readonly url: string;
  /** An npm user config pointing `registry` here; pass it as `npm_config_userconfig`. */
  readonly npmrc: string;
  readonly #dir: string;
  readonly #child: ChildProcess;
  readonly #exited: Promise<void>;
  #log = "";

  private constructor(dir: string, port: number, child: ChildProcess) {
    this.#dir = dir;
    this.url = `http://127.0.0.1:${port}/`;
    this.npmrc = join(dir, "npmrc");
    this.#child = child;
    this.#exited = new Promise((done) => child.once("exit", () => done()));
    const collect = (chunk: Buffer) => {
      this.#log += chunk.toString();
    };
    child.stdout?.on("data", collect);
    child.stderr?.on("data", collect);
    // Anonymous publishing is allowed; the token only satisfies clients that insist on one.
    writeFileSync(
      this.npmrc,
      `registry=${this.url}\n//127.0.0.1:${port}/:_authToken=local-registry\n`,
    );
  }

  /**
   * Starts verdaccio and resolves once it answers `/-/ping`.
   *
   * @throws Error when it exits or is not ready within 30 s; the message carries its output.
   */
  static async start(): Promise<LocalRegistry> {
    const dir = mkdtempSync(join(tmpdir(), "dk-registry-"));
    const storage = join(dir, "storage");
    mkdirSync(storage);
    const config = join(dir, "config.yaml");
    writeFileSync(config, configYaml(storage));
    const port = await freePort();
    const bin = join(
      dirname(createRequire(import.meta.url).resolve("verdaccio/package.json")),
      "bin",
      "verdaccio",
    );
    const child = spawn(
      process.execPath,
      [bin, "--config", config, "--listen", `127.0.0.1:${port}`],
      { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    const registry = new LocalRegistry(dir, port, child);
    try {
      await registry.#waitReady(30_000);
    } catch (error) {
      await registry.stop();
      throw error;
    }
    return registry;
  }

  /** Everything verdaccio printed so far. */
  output(): string {
    return this.#log;
  }

  /** The manifests (published package.json) of every version of `name` this registry holds. */
  async versions(name: string): Promise<Record<string, PublishedManifest>> {
    const response = await fetch(new URL(name.replace("/", "%2f"), this.url));
    if (response.status === 404) return {};
    const body = (await response.json()) as { versions?: Record<string, PublishedManifest> };
    return body.versions ?? {};
  }

  /** Stops verdaccio (SIGTERM to its group, SIGKILL after 5 s) and removes its directory. */
  async stop(): Promise<void> {
    const pid = this.#child.pid;
    if (pid !== undefined && this.#child.exitCode === null && this.#child.signalCode === null) {
      signalGroup(pid, "SIGTERM");
      const timer = new Promise((done) => setTimeout(done, 5_000).unref());
      if ((await Promise.race([this.#exited.then(() => "exited"), timer])) !== "exited") {
        signalGroup(pid, "SIGKILL");
        await this.#exited;
      }
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }

  async #waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.#child.exitCode !== null) break;
      try {
        const response = await fetch(new URL("-/ping", this.url));
        await response.arrayBuffer();
        if (response.ok) return;
      } catch {
        // Not listening yet.
      }
      await new Promise((done) => setTimeout(done, 200));
    }
    throw new Error(`verdaccio was not ready at ${this.url}\n--- output ---\n${this.#log}`);
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

function configYaml(storage: string): string {
  return `storage: ${JSON.stringify(storage)}
web:
  enable: false
auth:
  htpasswd:
    file: ./htpasswd
    max_users: -1
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
    timeout: 60s
    cache: false
packages:
${LOCAL_ONLY.map((name) => `  "${name}":\n    access: $all\n    publish: $all\n    unpublish: $all\n`).join("")}  "**":
    access: $all
    publish: $authenticated
    proxy: npmjs
log: { type: stdout, format: pretty, level: warn }
`;
}
