import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { encode } from "@durablekit/handle-journal";
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

/**
 * An execution as the program routes answer it: `result` is the `json` part of handle-journal's
 * codec form of the program's return value and `resultMeta` its `meta` part (absent for plain
 * JSON), so BigInt, Map, Set, bytes, Error, RegExp, `undefined` and Dates cross HTTP exactly:
 * `decode(JSON.stringify({ json: result, meta: resultMeta }))` gives the value back.
 */
export type HttpExecution<E extends Execution = Execution> = Omit<E, "result"> & {
  result?: unknown;
  resultMeta?: unknown;
};

/** An execution (or record) in its HTTP form: the result in the codec's JSON form, never lossy. */
function httpForm<E extends Execution>(execution: E): HttpExecution<E> {
  const { result, ...rest } = execution;
  if (!("result" in execution)) return rest;
  const { json, meta } = JSON.parse(encode(result)) as { json: unknown; meta?: unknown };
  return { ...rest, result: json, ...(meta === undefined ? {} : { resultMeta: meta }) };
}

/** How often a joining retry looks at an execution another request of this instance is running. */
const JOIN_POLL_MS = 50;

/** How long a joining retry waits for the execution to end (the run timeout, with a margin). */
const JOIN_WAIT_MS = 35_000;

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

  /**
   * Runs a program to its end; a program refused before running answers a coded 400. With an `id`
   * that already names an execution, nothing new runs: the call joins that execution and answers
   * how it ended (a retry after a lost response, or after the server died mid-run and restarted).
   */
  async runProgram(
    code: string,
    options: { onInterrupt?: BridgeInterruptPolicy | "replay"; access?: BridgeAccess; id?: string },
  ): Promise<ProgramCall<HttpExecution>> {
    try {
      return { ok: true, value: httpForm(await this.executor.execute(code, undefined, options)) };
    } catch (error) {
      if (isBridgeError(error)) {
        if (error.code === "bridge/conflict" && options.id !== undefined) {
          return { ok: true, value: httpForm(await this.#join(options.id)) };
        }
        return { ok: false, status: 400, code: error.code, message: error.message };
      }
      throw error;
    }
  }

  /**
   * Waits for execution `id` to end and answers it. One left running by a previous instance of this
   * object (the server died under it) is settled now by recovery, as the alarm would.
   */
  async #join(id: string): Promise<Execution> {
    const deadline = Date.now() + JOIN_WAIT_MS;
    for (;;) {
      const record = this.executor.get(id) as ExecutionRecord;
      // Past the deadline the caller gets the running record and may read it later.
      if (record.state !== "running" || Date.now() > deadline) {
        const { executionId, state, result, error } = record;
        return {
          executionId,
          state,
          ...("result" in record ? { result } : {}),
          ...(error === undefined ? {} : { error }),
        };
      }
      if (this.executor.running.includes(id)) {
        await new Promise((resolve) => setTimeout(resolve, JOIN_POLL_MS));
      } else {
        await this.executor.recover();
      }
    }
  }

  /** An execution's record in its HTTP form, or null. */
  execution(executionId: string): HttpExecution<ExecutionRecord> | null {
    const record = this.executor.get(executionId);
    return record === null ? null : httpForm(record);
  }

  /** What the jobs module really did. */
  jobCounters(): JobCounters {
    return this.#jobs.counters();
  }
}
