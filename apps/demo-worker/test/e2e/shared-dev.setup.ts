import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import type { TestProject } from "vitest/node";

/** Where a running demo is reached: what the e2e files that share one `wrangler dev` need. */
export interface SharedDemo {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  /** PID of wrangler's process group leader (for `workerdRss`). */
  readonly pid: number;
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The one `wrangler dev` of the demo with `DEMO_DEBUG=on`, shared by the files that never restart it. */
    sharedDemo: SharedDemo;
  }
}

const demoDir = fileURLToPath(new URL("../..", import.meta.url));
let dev: WranglerDev | undefined;

/**
 * Starts one `wrangler dev` of the demo (debug routes on) for the e2e run. Files that kill or
 * restart their server, or need other vars, start their own; the rest read this one with
 * `inject("sharedDemo")`, so the run starts one server for all of them instead of one each.
 */
export async function setup(project: TestProject): Promise<void> {
  dev = await startWranglerDev({ cwd: demoDir, vars: { DEMO_DEBUG: "on" } });
  project.provide("sharedDemo", { url: dev.url, port: dev.port, pid: dev.pid });
}

/** Stops the shared server and removes its state. */
export async function teardown(): Promise<void> {
  await dev?.dispose();
}
