import { spawn } from "node:child_process";
import { delimiter } from "node:path";

/**
 * The environment a child pnpm gets: this one without the calling pnpm's own variables and without
 * any `node_modules/.bin` on PATH, so a project outside the workspace runs on the machine's Node and
 * its own devDependencies, as it would for a user, never on this repository's tools.
 */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(npm_|pnpm_|PNPM_)/i.test(key)) env[key] = value;
  }
  env.PATH = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((entry) => !/[\\/]node_modules[\\/]\.bin$/.test(entry))
    .join(delimiter);
  return { ...env, ...extra, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };
}

/**
 * Runs `npx -y pnpm@10 …args` in `cwd` and resolves with its output.
 *
 * @throws Error when it exits non-zero or outlives `timeoutMs` (then its process group is killed);
 *   the message carries the command and its output.
 */
export function pnpm(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<string> {
  return run("npx", ["-y", "pnpm@10", ...args], options);
}

/**
 * Runs the machine's `npm …args` in `cwd` (with {@link childEnv}, the Node on PATH is the machine's,
 * as for a user) and resolves with its output.
 *
 * @throws Error as {@link pnpm} does.
 */
export function npm(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<string> {
  return run("npm", args, options);
}

/** A long-running command started by {@link serve}, in its own process group. */
export interface Served {
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM to its group, SIGKILL after 5 s; resolves once it exited. */
  stop(): Promise<void>;
}

/**
 * Starts `command …args` in `cwd` in its own process group and resolves once `url` answers any HTTP
 * status (a server is listening), so the caller can make its request.
 *
 * @throws Error when it exits first or `url` does not answer within `timeoutMs`; its group is
 *   stopped and the message carries its output.
 */
export async function serve(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; url: string; timeoutMs: number },
): Promise<Served> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const signal = (name: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, name);
    } catch {
      // The group is already gone.
    }
  };
  const served: Served = {
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signal("SIGTERM");
      const timer = new Promise((done) => setTimeout(done, 5_000).unref());
      if ((await Promise.race([exited.then(() => "exited"), timer])) !== "exited") {
        signal("SIGKILL");
        await exited;
      }
    },
  };
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline && child.exitCode === null && child.signalCode === null) {
    try {
      const response = await fetch(options.url);
      await response.arrayBuffer();
      return served;
    } catch {
      await new Promise((done) => setTimeout(done, 250));
    }
  }
  await served.stop();
  throw new Error(
    `${command} ${args.join(" ")} in ${options.cwd}: ${options.url} did not answer\n--- output ---\n${output}`,
  );
}

/** Runs a command in its own process group; see {@link pnpm}. */
export function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    }, options.timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else {
        const how =
          signal === null ? `exit ${code}` : `${signal} (timeout ${options.timeoutMs} ms)`;
        reject(
          new Error(
            `${command} ${args.join(" ")} in ${options.cwd}: ${how}\n--- output ---\n${output}`,
          ),
        );
      }
    });
  });
}
