import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import {
  type BridgeAccess,
  type BridgeInterruptPolicy,
  type Execution,
  type ExecutionRecord,
  Executor,
  isBridgeError,
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
  readonly #jobs = new JobStore(this.ctx.storage.sql);
  readonly executor = new Executor(this.ctx, {
    loader: this.env.LOADER,
    modules: { "codemode:jobs": jobsModule(this.#jobs) },
    limits: { runTimeoutMs: 30_000, callTimeoutMs: 15_000 },
  });
  readonly alarms = new Alarms(this.ctx, { parts: [this.executor] });

  override alarm() {
    return this.alarms.alarm();
  }

  /** Runs a program to its end; a program refused before running answers a coded 400. */
  async runProgram(
    code: string,
    options: { onInterrupt?: BridgeInterruptPolicy | "replay"; access?: BridgeAccess },
  ): Promise<ProgramCall<Execution>> {
    try {
      return { ok: true, value: await this.executor.execute(code, undefined, options) };
    } catch (error) {
      if (isBridgeError(error)) {
        return { ok: false, status: 400, code: error.code, message: error.message };
      }
      throw error;
    }
  }

  /** An execution's record, or null. */
  execution(executionId: string): ExecutionRecord | null {
    return this.executor.get(executionId);
  }

  /** What the jobs module really did. */
  jobCounters(): JobCounters {
    return this.#jobs.counters();
  }
}
