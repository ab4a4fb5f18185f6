// The Env every snippet of the guides compiles against, written as `wrangler types` writes it into
// worker-configuration.d.ts from a wrangler.jsonc that declares the bindings the guides name. A
// project's own Env comes the same way from its own wrangler.jsonc (docs/getting-started.md).
declare namespace Cloudflare {
  interface Env {
    /** docs/durable-streams.md, packages/sse: one object per stream path. */
    STREAMS: DurableObjectNamespace;
    /** docs/durable-streams.md, packages/sse: the subscription hub, and a webhook's receiver. */
    HUB: DurableObjectNamespace;
    ORDERS: DurableObjectNamespace;
    /** docs/programs.md, packages/rpc-bridge and packages/tasks: `"worker_loaders"`. */
    LOADER: WorkerLoader;
    /** docs/inspect.md, packages/inspect: a secret (`wrangler secret put INSPECT_TOKEN`). */
    INSPECT_TOKEN: string;
    /** packages/tasks, child runs: the shard objects and the job object itself. */
    SHARD: DurableObjectNamespace;
    JOB: DurableObjectNamespace;
  }
}
interface Env extends Cloudflare.Env {}
