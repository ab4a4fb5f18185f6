import type { BenchObject } from "./worker";

/** Which direction of a metric is better. */
export type Better = "higher" | "lower";

/** One figure a workload reports. */
export interface MetricSpec {
  /** Key in the figures a side returns. */
  key: string;
  /** Human label for the table. */
  label: string;
  /** Unit, e.g. `rows/s`, `ms`, `rows`. */
  unit: string;
  better: Better;
}

/** What a side of a workload runs with: a fresh Durable Object per round. */
export interface WorkloadContext {
  ctx: DurableObjectState;
  env: BenchEnv;
}

/** Bindings of the bench Worker. */
export interface BenchEnv {
  BENCH: DurableObjectNamespace<BenchObject>;
  LOADER: WorkerLoader;
}

/** Figures one side produced in one round, keyed by {@link MetricSpec.key}. */
export type Figures = Record<string, number>;

/** A side of a workload: ours, or an anchor implementation of the same work. */
export interface WorkloadSide {
  /** Who this side is, e.g. `durablekit`, `agents@0.32.0`. */
  name: string;
  run(context: WorkloadContext): Promise<Figures> | Figures;
}

/**
 * A benchmark workload: the same work done by durablekit and, where one exists, by an anchor.
 * Every round runs each side in its own fresh Durable Object, so no side sees the other's state.
 */
export interface Workload {
  /** Stable id, used for filtering (`pnpm bench <filter>`) and in `results.json`. */
  name: string;
  /** One line saying what is measured. */
  title: string;
  metrics: MetricSpec[];
  ours: WorkloadSide;
  anchor?: WorkloadSide;
}

/** The metric descriptions the runner fetches from the Worker. */
export interface WorkloadInfo {
  name: string;
  title: string;
  metrics: MetricSpec[];
  ours: string;
  anchor: string | null;
}
