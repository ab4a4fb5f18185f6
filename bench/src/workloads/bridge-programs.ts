import { RpcTarget } from "cloudflare:workers";
import {
  DEFAULT_COMPATIBILITY_DATE,
  DEFAULT_LIMITS,
  Executor,
  readOnly,
} from "@durablekit/rpc-bridge";

/** The function every side calls: the bridged host call, the handle method and the direct RPC call. */
export function add([a, b]: [number, number]): number {
  return a + b;
}

/** An object a bridged call returns; its method calls the same function. */
export class Counter extends RpcTarget {
  add(args: [number, number]): number {
    return add(args);
  }
}

/** The bridged setup: one host module with the function and a function returning a Counter. */
export function benchExecutor(ctx: DurableObjectState, env: { LOADER: WorkerLoader }): Executor {
  return new Executor(ctx, {
    loader: env.LOADER,
    limits: { maxCalls: 100_000 },
    modules: {
      "bench:math": { add: readOnly(add), counter: readOnly(() => new Counter()) },
    },
  });
}

/** Median of a list of numbers. */
export function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** A program making `calls` sequential host calls of `add`. */
export function sequentialCalls(specifier: string, calls: number): string {
  return `import { add } from ${JSON.stringify(specifier)};
export default async function () {
  let sum = 0;
  for (let i = 0; i < ${calls}; i++) sum = await add(sum, 1);
  return sum;
}`;
}

/**
 * The default entrypoint of a fresh isolate whose main module is `source`, loaded as the bridge
 * loads a program's (same compatibility date and CPU limit, no network, no bindings).
 */
export function loadRunner<T>(loader: WorkerLoader, source: string): T {
  const limits = { cpuMs: DEFAULT_LIMITS.cpuMs };
  const worker = loader.load({
    compatibilityDate: DEFAULT_COMPATIBILITY_DATE,
    compatibilityFlags: [],
    limits,
    mainModule: "runner.js",
    modules: { "runner.js": source },
    env: {},
    globalOutbound: null,
  });
  return worker.getEntrypoint(undefined, { limits }) as unknown as T;
}
