import { RpcTarget } from "cloudflare:workers";
import type { Figures, Workload, WorkloadContext } from "../workload";
import { add, benchExecutor, Counter, loadRunner } from "./bridge-programs";

const BATCH = 400;
const BATCHES = 10;

/** The same function, reached by direct Workers RPC calls (no bridge). */
class Direct extends RpcTarget {
  add(args: [number, number]): number {
    return add(args);
  }

  /** An object whose method calls the same function, as the bridged `counter()` returns one. */
  counter(): Counter {
    return new Counter();
  }
}

/**
 * Times batches of sequential calls inside the isolate, alternating a batch of top-level calls
 * with a batch of method calls so both see the same load, and keeps each kind's best batch (the
 * isolate's clock has millisecond resolution; the best batch is the least disturbed by other load
 * on the machine). Every side runs this same loop.
 */
const BEST_BATCHES = `async function bestOf(call, method, batch, batches) {
  for (let i = 0; i < 20; i++) { await call(i); await method(i); }
  const best = { host: Infinity, method: Infinity };
  for (let b = 0; b < batches; b++) {
    let start = performance.now();
    for (let i = 0; i < batch; i++) await call(i);
    best.host = Math.min(best.host, (performance.now() - start) / batch);
    start = performance.now();
    for (let i = 0; i < batch; i++) await method(i);
    best.method = Math.min(best.method, (performance.now() - start) / batch);
  }
  return best;
}`;

/** The bridged program: an exported host function, and a method of an object one returned. */
const BRIDGED = `import { add, counter } from "bench:math";
${BEST_BATCHES}
export default async function ({ batch, batches }) {
  const c = await counter();
  return bestOf((i) => add(i, 1), (i) => c.add(i, 1), batch, batches);
}`;

/** The same loop over a direct RpcTarget stub and a stub one of its calls returned. */
const DIRECT_RUNNER = `import { WorkerEntrypoint } from "cloudflare:workers";
${BEST_BATCHES}
export default class extends WorkerEntrypoint {
  async evaluate({ batch, batches }, direct) {
    const c = await direct.counter();
    return bestOf((i) => direct.add([i, 1]), (i) => c.add([i, 1]), batch, batches);
  }
}`;

/**
 * One bridged host call and one bridged handle-method call (each with its own context, limits,
 * access check and byte measure) against direct Workers RPC calls to the same function from an
 * isolate loaded the same way (same compatibility date and CPU limit): a call on the stub the
 * isolate was handed, and a method call on a stub a call returned. Each side alternates ten
 * batches of 400 sequential calls of each kind, timed inside the isolate, and keeps the best.
 */
export const bridgeVsRpc: Workload = {
  name: "bridge-rpc",
  title: `a bridged call vs a direct Workers RPC call to the same function (best of ${BATCHES} alternating batches of ${BATCH} sequential calls from a Worker Loader isolate)`,
  metrics: [
    { key: "hostCallMs", label: "bridged host call", unit: "ms/call", better: "lower" },
    { key: "methodCallMs", label: "bridged handle-method call", unit: "ms/call", better: "lower" },
  ],
  ours: {
    name: "rpc-bridge",
    async run({ ctx, env }: WorkloadContext): Promise<Figures> {
      const execution = await benchExecutor(ctx, env).execute(BRIDGED, {
        batch: BATCH,
        batches: BATCHES,
      });
      if (execution.state !== "completed") throw new Error(JSON.stringify(execution.error));
      const { host, method } = execution.result as { host: number; method: number };
      return { hostCallMs: host, methodCallMs: method };
    },
  },
  anchor: {
    name: "direct Workers RPC",
    async run({ env }: WorkloadContext): Promise<Figures> {
      const entry = loadRunner<{
        evaluate(input: unknown, direct: Direct): Promise<{ host: number; method: number }>;
      }>(env.LOADER, DIRECT_RUNNER);
      const { host, method } = await entry.evaluate(
        { batch: BATCH, batches: BATCHES },
        new Direct(),
      );
      return { hostCallMs: host, methodCallMs: method };
    },
  },
};
