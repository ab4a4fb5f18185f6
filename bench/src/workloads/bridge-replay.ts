import {
  Workspace,
  type WorkspaceModuleCallContext,
  type WorkspaceRuntimeResult,
  type WorkspaceRuntimeValue,
} from "@cloudflare/computer";
import { WorkerJavaScriptBackend } from "@cloudflare/computer/backends/worker-javascript";
import { type BridgeCallContext, Executor, readOnly } from "@durablekit/rpc-bridge";
import { anotherInstance, withOverrides } from "@durablekit/test-kit";
import type { Figures, Workload, WorkloadContext } from "../workload";
import { add, medianOf, sequentialCalls } from "./bridge-programs";
import { CommitCounter } from "./commit-counter";

/** Extra sequential calls of the per-call runs (each paired with a run of one call). */
const EXTRA = 1_000;
/** Pairs of per-call runs per mode; the figure is their median. */
const REPEATS = 3;
/** Journaled calls of the replayed runs. */
const SIZES = [1_000, 10_000] as const;
/** What the interrupted call is answered with when the run resumes. */
export const ANSWER = "approved";

/**
 * The replayed program: `calls` sequential host calls, then `approve`, whose host function
 * interrupts the run. Resumed, the program runs again from the top: every `add` is answered from
 * the journal, `approve` answers {@link ANSWER}, and the program returns.
 */
export function approvalProgram(specifier: string, calls: number): string {
  return `import { add, approve } from ${JSON.stringify(specifier)};
export default async function () {
  let sum = 0;
  for (let i = 0; i < ${calls}; i++) sum = await add(sum, 1);
  const answer = await approve({ sum });
  return { sum, answer };
}`;
}

/** Runs of each host function, counted the same way on both sides (a replayed call does not run). */
export class HostCounts {
  adds = 0;
  approvals = 0;
}

/**
 * The port the measurements drive, one implementation per side. Both sides answer `add` with the
 * same function and interrupt in `approve` through their call context's `interrupt`.
 */
interface ReplayRuns {
  /** The specifier programs import `add` and `approve` from. */
  readonly specifier: string;
  /** Runs `source` (making `add` calls only) to its end and returns its result. */
  complete(source: string, journaled: boolean): Promise<unknown>;
  /** Starts the approval program as `id` and resolves once it is interrupted in `approve`. */
  interrupt(source: string, id: string): Promise<void>;
  /**
   * Resumes `id` with `answer` from a new instance over the same storage (what an object evicted
   * while the run waited does) and returns the run's result.
   */
  resume(id: string, answer: string): Promise<unknown>;
}

/** How a side builds its runs over a state (the real one, or one whose SQL is observed). */
type RunsOver = (
  state: DurableObjectState,
  env: WorkloadContext["env"],
  counts: HostCounts,
) => ReplayRuns;

/** rpc-bridge: an `Executor` per instance; a replay run is `onInterrupt: "replay"`. */
export class BridgeRuns implements ReplayRuns {
  readonly specifier = "bench:replay";
  readonly #state: DurableObjectState;
  readonly #env: WorkloadContext["env"];
  readonly #counts: HostCounts;
  #executor: Executor;

  constructor(state: DurableObjectState, env: WorkloadContext["env"], counts: HostCounts) {
    this.#state = state;
    this.#env = env;
    this.#counts = counts;
    this.#executor = this.#newExecutor(state);
  }

  #newExecutor(state: DurableObjectState): Executor {
    const counts = this.#counts;
    return new Executor(state, {
      loader: this.#env.LOADER,
      limits: { maxCalls: 100_000 },
      modules: {
        "bench:replay": {
          add: readOnly((args: [number, number]) => {
            counts.adds += 1;
            return add(args);
          }),
          approve: readOnly(([payload]: [unknown], ctx: BridgeCallContext) => {
            counts.approvals += 1;
            return ctx.interrupt(payload);
          }),
        },
      },
    });
  }

  async complete(source: string, journaled: boolean): Promise<unknown> {
    const execution = await this.#executor.execute(source, undefined, {
      onInterrupt: journaled ? "replay" : "fail",
    });
    if (execution.state !== "completed") throw new Error(JSON.stringify(execution.error));
    return execution.result;
  }

  async interrupt(source: string, id: string): Promise<void> {
    const execution = await this.#executor.execute(source, undefined, {
      id,
      onInterrupt: "replay",
    });
    if (execution.state !== "interrupted") {
      throw new Error(`expected an interrupted run, got ${JSON.stringify(execution)}`);
    }
  }

  async resume(id: string, answer: string): Promise<unknown> {
    // A new instance's executor knows nothing of the run but its rows: it loads the journal to
    // replay it.
    this.#executor = this.#newExecutor(anotherInstance(this.#state));
    const execution = await this.#executor.resume(id, answer);
    if (execution.state !== "completed") throw new Error(JSON.stringify(execution.error));
    return execution.result;
  }
}

/**
 * @cloudflare/computer 0.8: a `Workspace` with the worker-javascript backend per instance; a
 * replay run is `onInterrupt: "replay"`, answered through `runtime.respond` (a new instance loads
 * the parked run on connect and relaunches it once answered).
 */
class ComputerRuns implements ReplayRuns {
  readonly specifier = "ws:demo";
  readonly #state: DurableObjectState;
  readonly #env: WorkloadContext["env"];
  readonly #counts: HostCounts;
  /** Set while {@link interrupt} waits for the run's release to end. */
  #onReleased: (() => void) | null = null;
  #workspace: Workspace;

  constructor(state: DurableObjectState, env: WorkloadContext["env"], counts: HostCounts) {
    this.#state = state;
    this.#env = env;
    this.#counts = counts;
    this.#workspace = this.#newWorkspace();
  }

  /**
   * A new instance over the same storage. computer reports no end of a release (the run's isolate
   * stopped after `ctx.interrupt()`): its last step reads the run's saved start
   * (`SELECT data FROM workspace_runtime_resume_start`) to relaunch it if it was answered meanwhile, so that read,
   * seen on this instance's SQL, ends {@link interrupt}. Until then an answer would be acted on by
   * this instance too.
   */
  #newWorkspace(): Workspace {
    const counts = this.#counts;
    const storage = this.#state.storage;
    const sql = withOverrides(storage.sql, {
      exec: (query: string, ...bindings: unknown[]) => {
        const cursor = storage.sql.exec(query, ...bindings);
        if (query.includes("SELECT data FROM workspace_runtime_resume_start")) this.#onReleased?.();
        return cursor;
      },
    });
    return new Workspace({
      storage: withOverrides(storage, { sql }),
      backends: [
        new WorkerJavaScriptBackend({
          loader: this.#env.LOADER,
          keepAliveIntervalMs: 0,
          maxCapabilityCalls: 100_000,
          modules: {
            "ws:demo": {
              add: (args: readonly unknown[]) => {
                counts.adds += 1;
                return add(args as [number, number]);
              },
              approve: (
                [payload]: readonly WorkspaceRuntimeValue[],
                ctx: WorkspaceModuleCallContext,
              ) => {
                counts.approvals += 1;
                return ctx.interrupt(payload ?? null);
              },
            },
          },
        }),
      ],
    });
  }

  async #result(handle: { result(): Promise<WorkspaceRuntimeResult<"utf8">> }): Promise<unknown> {
    const result = await handle.result();
    if (result.status !== "completed")
      throw new Error(`computer run ${result.status}: ${result.stderr}`);
    return result.value;
  }

  async complete(source: string, journaled: boolean): Promise<unknown> {
    const handle = await this.#workspace.runtime.exec(source, {
      onInterrupt: journaled ? "replay" : "fail",
    });
    return this.#result(handle);
  }

  async interrupt(source: string, id: string): Promise<void> {
    const released = new Promise<void>((resolve) => {
      this.#onReleased = resolve;
    });
    try {
      await this.#workspace.runtime.exec(source, { id, onInterrupt: "replay" });
      await released;
    } finally {
      this.#onReleased = null;
    }
    const [call] = await this.#workspace.runtime.pending();
    if (call?.id !== id) throw new Error(`expected ${id} to wait, got ${JSON.stringify(call)}`);
  }

  async resume(id: string, answer: string): Promise<unknown> {
    this.#workspace = this.#newWorkspace();
    const [call] = await this.#workspace.runtime.pending();
    if (call?.id !== id) throw new Error(`expected ${id} to wait, got ${JSON.stringify(call)}`);
    await this.#workspace.runtime.respond(id, call.callId, answer);
    return this.#result(await this.#workspace.runtime.getExec(id, { encoding: "utf8" }));
  }
}

/** Milliseconds `fn` takes, with its result. */
async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/** How many calls the batched program keeps in flight at once (`Promise.all`). */
const WIDTH = 25;

/** A program making `calls` calls of `add`, at most {@link WIDTH} at a time; it returns `calls`. */
function batchedCalls(specifier: string, calls: number): string {
  return `import { add } from ${JSON.stringify(specifier)};
export default async function () {
  let sum = 0;
  for (let i = 0; i < ${calls}; i += ${WIDTH}) {
    const batch = Array.from({ length: Math.min(${WIDTH}, ${calls} - i) }, () => add(1, 0));
    for (const one of await Promise.all(batch)) sum += one;
  }
  return sum;
}`;
}

/** The two shapes of call the per-call figures time: one at a time, or {@link WIDTH} at a time. */
type Shape = typeof sequentialCalls;

/**
 * Per extra call, seen from the object, in µs: the median over {@link REPEATS} pairs of (run with
 * 1 + EXTRA calls − the run with 1 call just before it) / EXTRA, so start-up stays out.
 */
async function perCallUs(runs: ReplayRuns, journaled: boolean, shape: Shape): Promise<number> {
  const one = shape(runs.specifier, 1);
  const many = shape(runs.specifier, 1 + EXTRA);
  const samples: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const a = await timed(() => runs.complete(one, journaled));
    const b = await timed(() => runs.complete(many, journaled));
    if (a.value !== 1 || b.value !== 1 + EXTRA) {
      throw new Error(`wrong results ${String(a.value)} ${String(b.value)}`);
    }
    samples.push(((b.ms - a.ms) / EXTRA) * 1_000);
  }
  return medianOf(samples);
}

/**
 * Rows written and commits per extra call, over an observed state (untimed): runs of 1 + EXTRA and
 * of 1 call; the difference over EXTRA leaves out what a run writes once (its execution record).
 */
async function durableCost({ ctx, env }: WorkloadContext, runsOver: RunsOver): Promise<Figures> {
  const observed = new CommitCounter(ctx);
  const runs = runsOver(observed.state, env, new HostCounts());
  const perCall = async (journaled: boolean, shape: Shape) => {
    const counted = async (calls: number) => {
      const mark = observed.mark();
      await runs.complete(shape(runs.specifier, calls), journaled);
      return { rows: observed.rowsWritten(mark), commits: await observed.commits(mark) };
    };
    const one = await counted(1);
    const many = await counted(1 + EXTRA);
    return {
      rows: (many.rows - one.rows) / EXTRA,
      commits: (many.commits - one.commits) / EXTRA,
    };
  };
  observed.counting = true;
  const journaled = await perCall(true, sequentialCalls);
  const batched = await perCall(true, batchedCalls);
  const plain = await perCall(false, sequentialCalls);
  observed.counting = false;
  return {
    rowsPerJournaledCall: journaled.rows,
    commitsPerJournaledCall: journaled.commits,
    commitsPerBatchedCall: batched.commits,
    rowsPerPlainCall: plain.rows,
  };
}

/** Per-call time of an SQLite insert followed by `await storage.sync()` (its own commit), in µs. */
async function commitFloorUs(ctx: DurableObjectState): Promise<number> {
  const sql = ctx.storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS bench_replay_floor (id INTEGER PRIMARY KEY, body TEXT)");
  const start = performance.now();
  for (let i = 0; i < EXTRA; i++) {
    sql.exec("INSERT INTO bench_replay_floor (body) VALUES (?)", '{"r":{"json":2}}');
    await ctx.storage.sync();
  }
  return ((performance.now() - start) / EXTRA) * 1_000;
}

/**
 * For each size: the approval program recorded live until it interrupts, then resumed from a new
 * instance, which answers every `add` from the journal (checked: no `add` runs during the replay)
 * and returns the expected result.
 */
async function replayFigures(runs: ReplayRuns, counts: HostCounts): Promise<Figures> {
  const figures: Figures = {};
  const approvals = counts.approvals;
  for (const calls of SIZES) {
    const id = `replay-${calls}`;
    const before = counts.adds;
    const live = await timed(() => runs.interrupt(approvalProgram(runs.specifier, calls), id));
    if (counts.adds - before !== calls) {
      throw new Error(`the live run made ${counts.adds - before} add calls, not ${calls}`);
    }
    const recorded = counts.adds;
    const replay = await timed(() => runs.resume(id, ANSWER));
    const result = replay.value as { sum?: unknown; answer?: unknown } | null;
    if (result?.sum !== calls || result.answer !== ANSWER) {
      throw new Error(`wrong replay result ${JSON.stringify(result)}`);
    }
    if (counts.adds !== recorded) {
      throw new Error(`the replay ran ${counts.adds - recorded} add calls live`);
    }
    const size = calls === 1_000 ? "1k" : "10k";
    figures[`live${size}Ms`] = live.ms;
    figures[`replay${size}Ms`] = replay.ms;
    figures[`speedup${size}`] = live.ms / replay.ms;
  }
  figures.approveRuns = (counts.approvals - approvals) / SIZES.length;
  // Per replayed call without the resume's start-up: the 10,000-call replay less the 1,000-call one.
  figures.replayedCallUs =
    (((figures.replay10kMs as number) - (figures.replay1kMs as number)) / 9_000) * 1_000;
  return figures;
}

/** One side's round: a warm-up, the per-call figures, the replays, then the counted pass. */
async function measure(context: WorkloadContext, runsOver: RunsOver): Promise<Figures> {
  const counts = new HostCounts();
  const runs = runsOver(context.ctx, context.env, counts);
  // Warm-up: first load of each path (plain, journaled, interrupt and resume).
  await runs.complete(sequentialCalls(runs.specifier, 10), false);
  await runs.complete(sequentialCalls(runs.specifier, 10), true);
  await runs.interrupt(approvalProgram(runs.specifier, 10), "warm-up");
  await runs.resume("warm-up", ANSWER);
  // The floor first, while the object's database holds only the warm-up's rows.
  const floorUs = await commitFloorUs(context.ctx);
  const plainCallUs = await perCallUs(runs, false, sequentialCalls);
  const journaledCallUs = await perCallUs(runs, true, sequentialCalls);
  const batchedCallUs = await perCallUs(runs, true, batchedCalls);
  const batchedPlainCallUs = await perCallUs(runs, false, batchedCalls);
  const replay = await replayFigures(runs, counts);
  return {
    plainCallUs,
    journaledCallUs,
    journaledVsPlain: journaledCallUs / plainCallUs,
    batchedCallUs,
    batchedPlainCallUs,
    batchedVsPlain: batchedCallUs / batchedPlainCallUs,
    batchedVsPlainCall: batchedCallUs / plainCallUs,
    floorUs,
    journaledVsFloor: journaledCallUs / floorUs,
    ...(await durableCost(context, runsOver)),
    ...replay,
  };
}

const sizeMetrics = SIZES.flatMap((calls) => {
  const size = calls === 1_000 ? "1k" : "10k";
  const n = calls.toLocaleString("en");
  return [
    {
      key: `live${size}Ms`,
      label: `${n} journaled calls live, until interrupted`,
      unit: "ms",
      better: "lower" as const,
    },
    {
      key: `replay${size}Ms`,
      label: `resume after an eviction: ${n} calls replayed from the journal`,
      unit: "ms",
      better: "lower" as const,
    },
    {
      key: `speedup${size}`,
      label: `${n}: live ÷ replay (goal ≥ 10)`,
      unit: "×",
      better: "higher" as const,
    },
  ];
});

/**
 * A replay run's call recorded live and answered from its journal after an eviction, for rpc-bridge
 * and @cloudflare/computer 0.8's worker-javascript backend: the same programs, the same host
 * function (`add`), an `approve` host function that interrupts the run through its call context,
 * both journaling in the object's SQLite.
 */
export const bridgeReplay: Workload = {
  name: "bridge-replay",
  title: `replay runs: rpc-bridge vs @cloudflare/computer@0.8.0 (per call: medians of ${REPEATS} paired runs with 1 and ${1 + EXTRA} sequential calls, from the object; replay: the program interrupted after ${SIZES.map((n) => n.toLocaleString("en")).join(" or ")} calls, resumed from a new instance)`,
  metrics: [
    {
      key: "plainCallUs",
      label: "plain live call (not journaled)",
      unit: "µs/call",
      better: "lower",
    },
    {
      key: "journaledCallUs",
      label: "journaled live call, one at a time (a commit per call)",
      unit: "µs/call",
      better: "lower",
    },
    { key: "journaledVsPlain", label: "journaled ÷ plain call", unit: "×", better: "lower" },
    {
      key: "journaledVsFloor",
      label: "journaled call, one at a time ÷ the floor below (goal ≤ 1.2)",
      unit: "×",
      better: "lower",
    },
    {
      key: "batchedCallUs",
      label: `journaled live call, ${WIDTH} at a time (Promise.all: one batch, one commit)`,
      unit: "µs/call",
      better: "lower",
    },
    {
      key: "batchedPlainCallUs",
      label: `plain live call, ${WIDTH} at a time (not journaled)`,
      unit: "µs/call",
      better: "lower",
    },
    {
      key: "batchedVsPlain",
      label: `journaled ÷ plain call, ${WIDTH} at a time`,
      unit: "×",
      better: "lower",
    },
    {
      key: "batchedVsPlainCall",
      label: `journaled call ${WIDTH} at a time ÷ plain call one at a time (goal ≤ 2)`,
      unit: "×",
      better: "lower",
    },
    {
      key: "floorUs",
      label: "floor: SQLite insert + await storage.sync(), same object",
      unit: "µs/op",
      better: "lower",
    },
    {
      key: "rowsPerJournaledCall",
      label: "rows written per journaled call",
      unit: "rows",
      better: "lower",
    },
    {
      key: "commitsPerJournaledCall",
      label: "SQLite commits per journaled call, one at a time",
      unit: "commits",
      better: "lower",
    },
    {
      key: "commitsPerBatchedCall",
      label: `SQLite commits per journaled call, ${WIDTH} at a time`,
      unit: "commits",
      better: "lower",
    },
    {
      key: "rowsPerPlainCall",
      label: "rows written per plain call",
      unit: "rows",
      better: "lower",
    },
    ...sizeMetrics,
    {
      key: "approveRuns",
      label: "runs of the interrupting host function per interrupted-and-resumed run",
      unit: "runs",
      better: "lower",
    },
    {
      key: "replayedCallUs",
      label: "per replayed call: (10,000-call resume − 1,000-call resume) ÷ 9,000",
      unit: "µs/call",
      better: "lower",
    },
  ],
  ours: {
    name: "rpc-bridge",
    run: (context) => measure(context, (state, env, counts) => new BridgeRuns(state, env, counts)),
  },
  anchor: {
    name: "@cloudflare/computer@0.8.0",
    run: (context) =>
      measure(context, (state, env, counts) => new ComputerRuns(state, env, counts)),
  },
};
