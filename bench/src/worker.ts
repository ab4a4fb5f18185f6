import { DurableObject } from "cloudflare:workers";
import type { BenchEnv, Figures, WorkloadInfo } from "./workload";
import { workloads } from "./workloads/index";

// The parent and shard classes of the fan-out workload (bindings in wrangler.jsonc).
export { FanParent, FanShard } from "./workloads/fan-out";
// The Workflow classes the fan-out-workflows workload compares against (bindings in wrangler.jsonc).
export { FanChildWorkflow, FanParentWorkflow } from "./workloads/fan-out-workflows";
// The Workflow class the tasks-workflows workload compares against (binding in wrangler.jsonc).
export { TasksBenchWorkflow } from "./workloads/tasks-workflows";

/** A fresh object per (workload, side, round) runs one side of one workload. */
export class BenchObject extends DurableObject<BenchEnv> {
  async run(workload: string, side: "ours" | "anchor"): Promise<Figures> {
    const found = workloads.find((w) => w.name === workload);
    const runner = found?.[side];
    if (!runner) throw new Error(`no ${side} side for workload "${workload}"`);
    return runner.run({ ctx: this.ctx, env: this.env });
  }

  /**
   * Parts under test arm the object's alarm as they would in production; the workloads drive wakes
   * themselves (`tasks.alarm()`), so a firing alarm does nothing here and never runs work twice.
   */
  override async alarm(): Promise<void> {}
}

function describe(): WorkloadInfo[] {
  return workloads.map((w) => ({
    name: w.name,
    title: w.title,
    metrics: w.metrics,
    ours: w.ours.name,
    anchor: w.anchor?.name ?? null,
  }));
}

export default {
  async fetch(request: Request, env: BenchEnv): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/workloads") return Response.json(describe());
    if (url.pathname === "/run" && request.method === "POST") {
      const { workload, side, round } = (await request.json()) as {
        workload: string;
        side: "ours" | "anchor";
        round: number;
      };
      const stub = env.BENCH.getByName(`${workload}:${side}:${round}:${crypto.randomUUID()}`);
      try {
        return Response.json(await stub.run(workload, side));
      } catch (error) {
        return Response.json({ error: String((error as Error)?.stack ?? error) }, { status: 500 });
      }
    }
    return new Response("not found", { status: 404 });
  },
} satisfies ExportedHandler<BenchEnv>;
