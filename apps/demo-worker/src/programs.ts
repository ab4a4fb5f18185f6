import { DurableObject } from "cloudflare:workers";
import {
  type Access,
  BridgeError,
  createExecutor,
  type Execution,
  type ExecutionRecord,
  type Executor,
  type InterruptPolicy,
  type ModuleMap,
} from "@durablekit/rpc-bridge";
import { type JobCounters, JobStore, jobsModule } from "./demo-jobs";
import type { Env } from "./env";

/** The name of the one programs object that answers the program routes. */
export const PROGRAMS_NAME = "default";

/** What the program routes get back: the value, or a coded refusal for a 4xx. */
export type ProgramCall<T> =
  | { ok: true; value: T }
  | { ok: false; status: number; code: string; message: string };

/**
 * The demo's programs Durable Object: runs program source in Worker Loader isolates through
 * `@durablekit/rpc-bridge`, against the demo host modules (`codemode:jobs`). Executions are
 * recorded in its SQLite (`dk_bridge_executions`); its alarm settles executions a restart cut off.
 */
export class Programs extends DurableObject<Env> {
  readonly #jobs: JobStore;
  readonly #modules: ModuleMap;
  readonly #executor: Executor;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#jobs = new JobStore(ctx.storage.sql);
    this.#modules = { "codemode:jobs": jobsModule(this.#jobs) };
    this.#executor = createExecutor({
      loader: env.LOADER,
      sql: ctx.storage.sql,
      modules: this.#modules,
      limits: { runTimeoutMs: 30_000, callTimeoutMs: 15_000 },
      armAlarm: (at) => this.#arm(at),
    });
  }

  #arm(at: number): void {
    void this.ctx.storage.getAlarm().then((current) => {
      if (current === null || at < current) return this.ctx.storage.setAlarm(at);
    });
  }

  /** Runs a program to its end; a program refused before running answers a coded 400. */
  async runProgram(
    code: string,
    options: { onInterrupt?: InterruptPolicy | "replay"; access?: Access },
  ): Promise<ProgramCall<Execution>> {
    try {
      return { ok: true, value: await this.#executor.execute(code, undefined, options) };
    } catch (error) {
      if (error instanceof BridgeError) {
        return { ok: false, status: 400, code: error.code, message: error.message };
      }
      throw error;
    }
  }

  /** An execution's record, or null. */
  execution(executionId: string): ExecutionRecord | null {
    return this.#executor.get(executionId);
  }

  /** What the jobs module really did. */
  jobCounters(): JobCounters {
    return this.#jobs.counters();
  }

  /** Settles executions a restart cut off, then re-arms for whatever still runs. */
  override async alarm(): Promise<void> {
    await this.#executor.alarm();
    const next = this.#executor.nextWakeAt();
    if (next !== null) await this.ctx.storage.setAlarm(next);
  }
}
