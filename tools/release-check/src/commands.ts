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
