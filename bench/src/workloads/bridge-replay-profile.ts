import { RpcTarget } from "cloudflare:workers";
import { decode, digestArgs, JournalStore, Replayer } from "@durablekit/handle-journal";
import type { Figures, Workload, WorkloadContext } from "../workload";
import { add, loadRunner, sequentialCalls } from "./bridge-programs";
import { ANSWER, approvalProgram, BridgeRuns, HostCounts } from "./bridge-replay";

/** Journaled calls of the profiled run. */
const CALLS = 10_000;

/** Milliseconds `fn` takes. */
async function timeMs(fn: () => unknown): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** The same function reached by direct Workers RPC from an isolate loaded as the bridge loads one. */
class Direct extends RpcTarget {
  add(args: [number, number]): number {
    return add(args);
  }
}

/** The same function, each call inserting one row in the object's SQLite first (a journal's write, alone). */
class Writing extends RpcTarget {
  readonly #sql: SqlStorage;
  constructor(sql: SqlStorage) {
    super();
    this.#sql = sql;
  }
  add(args: [number, number]): number {
    this.#sql.exec("INSERT INTO bench_profile_rows (body) VALUES (?)", "{}");
    return add(args);
  }
  addMany(calls: [number, number][]): number[] {
    return calls.map((args) => this.add(args));
  }
}

const DIRECT_RUNNER = `import { WorkerEntrypoint } from "cloudflare:workers";
export default class extends WorkerEntrypoint {
  async evaluate(calls, direct) {
    let sum = 0;
    for (let i = 0; i < calls; i++) sum = await direct.add([sum, 1]);
    return sum;
  }
  async wide(calls, target, width) {
    let sum = 0;
    for (let i = 0; i < calls; i += width) {
      const batch = [];
      for (let j = 0; j < width; j++) batch.push(target.add([1, 0]));
      for (const one of await Promise.all(batch)) sum += one;
    }
    return sum;
  }
  async batched(calls, target, width) {
    let sum = 0;
    for (let i = 0; i < calls; i += width) {
      const batch = [];
      for (let j = 0; j < width; j++) batch.push([1, 0]);
      for (const one of await target.addMany(batch)) sum += one;
    }
    return sum;
  }
}`;

/** Calls in flight at once in the commit floors (as bridge-replay's batched program). */
const WIDTH = 25;
/** Calls of each commit floor run. */
const FLOOR_CALLS = 1_000;

/**
 * What Durable Object commits cost calls that arrive together, without the bridge: {@link WIDTH}
 * direct Workers RPC calls in flight, each inserting one row (one incoming event, one commit
 * each), against the same calls sent as one RPC of {@link WIDTH} (one event, one commit). Per call, µs.
 */
async function commitFloorsUs({
  ctx,
  env,
}: WorkloadContext): Promise<{ wide: number; one: number }> {
  ctx.storage.sql.exec(
    "CREATE TABLE IF NOT EXISTS bench_profile_rows (id INTEGER PRIMARY KEY, body TEXT)",
  );
  const entry = loadRunner<{
    wide(calls: number, target: Writing, width: number): Promise<number>;
    batched(calls: number, target: Writing, width: number): Promise<number>;
  }>(env.LOADER, DIRECT_RUNNER);
  const target = new Writing(ctx.storage.sql);
  await entry.wide(WIDTH, target, WIDTH);
  await entry.batched(WIDTH, target, WIDTH);
  const perCall = async (run: () => Promise<number>) => {
    const start = performance.now();
    const sum = await run();
    if (sum !== FLOOR_CALLS) throw new Error(`a commit floor run returned ${sum}`);
    return ((performance.now() - start) / FLOOR_CALLS) * 1_000;
  };
  return {
    wide: await perCall(() => entry.wide(FLOOR_CALLS, target, WIDTH)),
    one: await perCall(() => entry.batched(FLOOR_CALLS, target, WIDTH)),
  };
}

/** A run of `calls` sequential direct Workers RPC calls from a fresh isolate, in ms. */
async function directRpcMs({ env }: WorkloadContext, calls: number): Promise<number> {
  const entry = loadRunner<{ evaluate(calls: number, direct: Direct): Promise<number> }>(
    env.LOADER,
    DIRECT_RUNNER,
  );
  const start = performance.now();
  const sum = await entry.evaluate(calls, new Direct());
  const ms = performance.now() - start;
  if (sum !== calls) throw new Error(`direct run returned ${sum}`);
  return ms;
}

/**
 * Where the time of an rpc-bridge replay goes. A run records {@link CALLS} journaled calls and is
 * interrupted; then, on that journal, the host-side steps of its replay are timed one by one (the
 * journal load, decoding every entry body, matching every call with handle-journal's Replayer,
 * digesting every call's arguments), and the whole resume; beside them a plain bridged run and a
 * direct Workers RPC run of as many sequential calls (a replayed call is one such round trip).
 * Per-call figures are run time ÷ calls; rpc-bridge only (computer 0.8 exposes no such steps).
 */
export const bridgeReplayProfile: Workload = {
  name: "bridge-replay-profile",
  title: `where an rpc-bridge replay of ${CALLS.toLocaleString("en")} journaled calls spends its time (host steps timed alone on the run's journal; run time ÷ calls)`,
  metrics: [
    { key: "resumeUs", label: "resume: per replayed call", unit: "µs/call", better: "lower" },
    {
      key: "plainUs",
      label: "plain bridged run (not journaled): per call",
      unit: "µs/call",
      better: "lower",
    },
    {
      key: "directUs",
      label: "direct Workers RPC run: per call (the round-trip floor)",
      unit: "µs/call",
      better: "lower",
    },
    {
      key: "loadUs",
      label: "journal load (one query, JournalStore.lookup): per entry",
      unit: "µs/entry",
      better: "lower",
    },
    { key: "decodeUs", label: "decode of an entry's body", unit: "µs/entry", better: "lower" },
    {
      key: "matchUs",
      label: "Replayer.next (key, module, method, digest)",
      unit: "µs/call",
      better: "lower",
    },
    { key: "digestUs", label: "digest of a call's arguments", unit: "µs/call", better: "lower" },
    {
      key: "replayExtraUs",
      label: "resume − plain run: what a replayed call adds to a plain call",
      unit: "µs/call",
      better: "lower",
    },
    {
      key: "wideWriteUs",
      label: `commit floor: ${WIDTH} direct RPCs in flight, each inserting a row (an event and a commit each)`,
      unit: "µs/call",
      better: "lower",
    },
    {
      key: "oneWriteUs",
      label: `commit floor: the same ${WIDTH} inserts in one RPC (one event, one commit)`,
      unit: "µs/call",
      better: "lower",
    },
  ],
  ours: {
    name: "rpc-bridge",
    async run(context: WorkloadContext): Promise<Figures> {
      const counts = new HostCounts();
      const runs = new BridgeRuns(context.ctx, context.env, counts);
      await runs.complete(sequentialCalls(runs.specifier, 10), false);
      await directRpcMs(context, 10);
      const id = "profiled";
      await runs.interrupt(approvalProgram(runs.specifier, CALLS), id);

      const store = new JournalStore(context.ctx);
      let entries = store.lookup(id);
      const loadMs = await timeMs(() => {
        entries = store.lookup(id);
      });
      if (entries.length !== CALLS + 1) throw new Error(`journal holds ${entries.length} entries`);
      const decodeMs = await timeMs(() => {
        for (const entry of entries) if (entry.payload !== null) decode(entry.payload);
      });
      const matchMs = await timeMs(() => {
        const replayer = new Replayer(entries);
        for (const e of entries) replayer.next(e.key, e.module, e.method, e.argsDigest);
      });
      const digestMs = await timeMs(() => {
        for (let i = 0; i < CALLS; i++) digestArgs([i, 1]);
      });

      const recorded = counts.adds;
      const resumeMs = await timeMs(async () => {
        const result = (await runs.resume(id, ANSWER)) as { sum?: unknown };
        if (result.sum !== CALLS) throw new Error(`wrong result ${JSON.stringify(result)}`);
      });
      if (counts.adds !== recorded) throw new Error("the replay ran add calls live");
      const plainMs = await timeMs(async () => {
        const sum = await runs.complete(sequentialCalls(runs.specifier, CALLS), false);
        if (sum !== CALLS) throw new Error(`wrong plain result ${String(sum)}`);
      });
      const directMs = await directRpcMs(context, CALLS);
      const floors = await commitFloorsUs(context);
      const us = (ms: number) => (ms / CALLS) * 1_000;
      return {
        resumeUs: us(resumeMs),
        plainUs: us(plainMs),
        directUs: us(directMs),
        loadUs: us(loadMs),
        decodeUs: us(decodeMs),
        matchUs: us(matchMs),
        digestUs: us(digestMs),
        replayExtraUs: us(resumeMs - plainMs),
        wideWriteUs: floors.wide,
        oneWriteUs: floors.one,
      };
    },
  },
};
