import { Workspace } from "@cloudflare/computer";
import { WorkerJavaScriptBackend } from "@cloudflare/computer/backends/worker-javascript";
import type { Figures, Workload, WorkloadContext } from "../workload";
import { add, benchExecutor, medianOf, sequentialCalls } from "./bridge-programs";

const REPEATS = 5;
const EXTRA = 1000;
const BATCH = 400;
const BATCHES = 8;

/** A program timing batches of sequential host calls inside the isolate (best batch per call). */
function perCallProgram(specifier: string): string {
  return `import { add } from ${JSON.stringify(specifier)};
export default async function () {
  let sum = 0;
  for (let i = 0; i < 20; i++) sum = await add(sum, 1);
  let best = Infinity;
  for (let b = 0; b < ${BATCHES}; b++) {
    const start = performance.now();
    for (let i = 0; i < ${BATCH}; i++) sum = await add(sum, 1);
    best = Math.min(best, (performance.now() - start) / ${BATCH});
  }
  return best;
}`;
}

/**
 * Start-up: the median wall time, seen from the Durable Object, of a run making one host call.
 * Per extra call: the median over repeats of (run with 1 + EXTRA calls − the run with 1 call just
 * before it) / EXTRA, seen from the Durable Object (the measure of the figures for
 * computer); pairing adjacent runs and a thousand extra calls keep start-up noise out of the
 * per-call figure. In the isolate: the best batch of sequential calls timed inside the isolate
 * (same loop for both).
 */
async function measure(
  runProgram: (source: string) => Promise<unknown>,
  specifier: string,
): Promise<Figures> {
  const one = sequentialCalls(specifier, 1);
  const many = sequentialCalls(specifier, 1 + EXTRA);
  await runProgram(one); // warm-up: first load of the backend's code paths
  const startup: number[] = [];
  const perCall: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    let start = performance.now();
    const a = await runProgram(one);
    const oneMs = performance.now() - start;
    start = performance.now();
    const b = await runProgram(many);
    const manyMs = performance.now() - start;
    if (a !== 1 || b !== 1 + EXTRA) throw new Error(`wrong results ${String(a)} ${String(b)}`);
    startup.push(oneMs);
    perCall.push((manyMs - oneMs) / EXTRA);
  }
  const inIsolateMs = Number(await runProgram(perCallProgram(specifier)));
  return { startupMs: medianOf(startup), perExtraCallMs: medianOf(perCall), inIsolateMs };
}

/**
 * A run with one host call (start-up), and the cost of each further sequential host call, for
 * rpc-bridge and for @cloudflare/computer 0.8's worker-javascript backend, both in a SQLite Durable
 * Object with a Worker Loader binding, both recording their executions in SQLite.
 */
export const bridgeVsComputer: Workload = {
  name: "bridge-computer",
  title: `a host-module call: rpc-bridge vs @cloudflare/computer@0.8.0 (medians of ${REPEATS} paired runs with 1 and ${1 + EXTRA} calls; in the isolate: best of ${BATCHES} batches of ${BATCH} calls)`,
  metrics: [
    { key: "startupMs", label: "run with one host call", unit: "ms", better: "lower" },
    {
      key: "perExtraCallMs",
      label: "per extra sequential call (from the object)",
      unit: "ms/call",
      better: "lower",
    },
    {
      key: "inIsolateMs",
      label: "per sequential call (timed in the isolate)",
      unit: "ms/call",
      better: "lower",
    },
  ],
  ours: {
    name: "rpc-bridge",
    async run({ ctx, env }: WorkloadContext): Promise<Figures> {
      const executor = benchExecutor(ctx, env);
      return measure(async (source) => {
        const execution = await executor.execute(source);
        if (execution.state !== "completed") throw new Error(JSON.stringify(execution.error));
        return execution.result;
      }, "bench:math");
    },
  },
  anchor: {
    name: "@cloudflare/computer@0.8.0",
    async run({ ctx, env }: WorkloadContext): Promise<Figures> {
      const workspace = new Workspace({
        storage: ctx.storage,
        backends: [
          new WorkerJavaScriptBackend({
            loader: env.LOADER,
            keepAliveIntervalMs: 0,
            maxCapabilityCalls: 100_000,
            modules: {
              "ws:demo": { add: (args: readonly unknown[]) => add(args as [number, number]) },
            },
          }),
        ],
      });
      return measure(async (source) => {
        const handle = await workspace.runtime.exec(source);
        const result = await handle.result();
        if (result.status !== "completed") {
          throw new Error(
            `computer run ${result.status}: ${new TextDecoder().decode(result.stderr)}`,
          );
        }
        return result.value;
      }, "ws:demo");
    },
  },
};
