import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freePort } from "./free-port.ts";

/** Options for {@link startWranglerDev}. */
export interface WranglerDevOptions {
  /** Directory holding the Worker's `wrangler.jsonc`; wrangler runs from here. */
  cwd: string;
  /** Config file, relative to `cwd`. Defaults to wrangler's own lookup. */
  config?: string;
  /** Port to listen on; a free one is chosen when omitted. */
  port?: number;
  /** Where local state persists. A fresh temp dir (removed by `dispose`) when omitted. */
  persistTo?: string;
  /** Path polled until it answers 2xx. Defaults to `/health`. */
  readyPath?: string;
  /** How long to wait for readiness. Defaults to 60 s. */
  readyTimeoutMs?: number;
  /** Extra `--var KEY:VALUE` pairs. */
  vars?: Record<string, string>;
  /** Echo wrangler's output to this process's stderr. Defaults to `DK_E2E_VERBOSE=1`. */
  verbose?: boolean;
}

/** A running `wrangler dev`, owned by the caller. */
export interface WranglerDev {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  readonly persistTo: string;
  /** PID of the process group leader (wrangler). */
  readonly pid: number;
  /** Everything wrangler printed so far (stdout and stderr). */
  output(): string;
  /** Stops wrangler and its workerd child gracefully (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Kills wrangler and workerd at once, as a crash would: no shutdown code runs. */
  kill(): Promise<void>;
  /** Starts a new `wrangler dev` on the same port and persist dir (after `kill` or `stop`). */
  restart(): Promise<WranglerDev>;
  /** Stops the process and removes a temp persist dir this harness created. */
  dispose(): Promise<void>;
}

/**
 * Starts `wrangler dev --ip 127.0.0.1` in its own process group and resolves once `readyPath`
 * answers 2xx. The process runs on the same Node binary as the caller.
 *
 * @throws Error when wrangler exits early or is not ready within `readyTimeoutMs`; the message
 *   carries wrangler's output.
 */
export async function startWranglerDev(options: WranglerDevOptions): Promise<WranglerDev> {
  const ownsPersistDir = options.persistTo === undefined;
  const persistTo = options.persistTo ?? mkdtempSync(join(tmpdir(), "dk-wrangler-"));
  const port = options.port ?? (await freePort());
  return launch({ ...options, persistTo, port }, ownsPersistDir);
}

async function launch(
  options: WranglerDevOptions & { persistTo: string; port: number },
  ownsPersistDir: boolean,
): Promise<WranglerDev> {
  const cwd = resolve(options.cwd);
  const wranglerPackage = createRequire(join(cwd, "package.json")).resolve("wrangler/package.json");
  const wranglerBin = join(dirname(wranglerPackage), "bin", "wrangler.js");
  const args = [
    wranglerBin,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(options.port),
    "--persist-to",
    options.persistTo,
    "--inspector-port",
    String(await freePort()),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  ];
  if (options.config) args.push("--config", options.config);
  for (const [key, value] of Object.entries(options.vars ?? {}))
    args.push("--var", `${key}:${value}`);

  const verbose = options.verbose ?? process.env.DK_E2E_VERBOSE === "1";
  const child = spawn(process.execPath, args, {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
  });
  let log = "";
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    log += text;
    if (verbose) process.stderr.write(text);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));

  const url = `http://127.0.0.1:${options.port}`;
  const pid = child.pid;
  if (pid === undefined) throw new Error(`wrangler dev did not start:\n${log}`);

  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  };
  const waitExit = async (ms: number) => {
    const timer = new Promise<"timeout">((done) => setTimeout(() => done("timeout"), ms).unref());
    return (await Promise.race([exited, timer])) !== "timeout";
  };
  let stopped = false;
  const handle: WranglerDev = {
    url,
    port: options.port,
    persistTo: options.persistTo,
    pid,
    output: () => log,
    async stop() {
      if (stopped) return;
      stopped = true;
      signalGroup("SIGTERM");
      if (!(await waitExit(5_000))) {
        signalGroup("SIGKILL");
        await waitExit(5_000);
      }
      await waitPortFree(options.port);
    },
    async kill() {
      if (stopped) return;
      stopped = true;
      signalGroup("SIGKILL");
      await waitExit(5_000);
      await waitPortFree(options.port);
    },
    async restart() {
      await handle.stop();
      return launch(options, ownsPersistDir);
    },
    async dispose() {
      await handle.stop();
      if (ownsPersistDir) rmSync(options.persistTo, { recursive: true, force: true });
    },
  };

  try {
    await waitReady(
      url + (options.readyPath ?? "/health"),
      options.readyTimeoutMs ?? 60_000,
      exited,
    );
  } catch (error) {
    await handle.stop();
    throw new Error(
      `wrangler dev was not ready: ${(error as Error).message}\n--- output ---\n${log}`,
    );
  }
  return handle;
}

async function waitReady(url: string, timeoutMs: number, exited: Promise<number | null>) {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + timeoutMs;
  let lastError = "";
  while (Date.now() < deadline) {
    if (gone) throw new Error("wrangler exited before it was ready");
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      await response.arrayBuffer();
      if (response.ok) return;
      lastError = `HTTP ${response.status}`;
    } catch (error) {
      lastError = (error as Error).message;
    }
    await new Promise((done) => setTimeout(done, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms (${lastError})`);
}

async function waitPortFree(port: number) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) });
    } catch {
      return;
    }
    await new Promise((done) => setTimeout(done, 100));
  }
}
