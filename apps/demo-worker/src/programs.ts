import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { encode } from "@durablekit/handle-journal";
import {
  type BridgeAccess,
  type BridgeExecution,
  type BridgeExecutionRecord,
  type BridgeInterruptPolicy,
  Executor,
  isBridgeError,
} from "@durablekit/rpc-bridge";
import type { Env } from "./env";
import type { HostCounts } from "./host-counts";
import { DemoHostModules } from "./host-modules";

/** The name of the one programs object that answers the program routes. */
export const PROGRAMS_NAME = "default";

/**
 * An execution as the program routes answer it: `result` is the `json` part of handle-journal's
 * codec form of the program's return value and `resultMeta` its `meta` part (absent for plain
 * JSON), so BigInt, Map, Set, bytes, Error, RegExp, `undefined` and Dates cross HTTP exactly:
 * `decode(JSON.stringify({ json: result, meta: resultMeta }))` gives the value back.
 */
export type HttpExecution<E extends BridgeExecution = BridgeExecution> = Omit<E, "result"> & {
  result?: unknown;
  resultMeta?: unknown;
};

/** An execution (or record) in its HTTP form: the result in the codec's JSON form, never lossy. */
export function httpForm<E extends BridgeExecution>(execution: E): HttpExecution<E> {
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
 * The HTTP status of a bridge refusal of a resume: an unknown execution 404, one in the wrong state
 * 409, else 400. A run refused before running is always a 400 (its `bridge/not-found` names a
 * module the program imports, not the resource of the request).
 */
const RESUME_REFUSAL_STATUS: Record<string, number> = {
  "bridge/not-found": 404,
  "bridge/conflict": 409,
};

/** The demo's program limits: a run attempt's wall time and each call's deadline. */
export const PROGRAM_LIMITS = { runTimeoutMs: 30_000, callTimeoutMs: 15_000 };

/**
 * The demo's programs Durable Object: runs program source in Worker Loader isolates through
 * `@durablekit/rpc-bridge`, against the demo host modules (`codemode:jobs`, `codemode:approval`,
 * `codemode:process`). Runs are replay runs unless a request picks another policy: every call is
 * journaled, `approval()` releases the run until `resume`, and a run cut off by a restart is
 * replayed from its journal. Executions are recorded in its SQLite (`dk_bridge_executions`, the
 * journal in `dk_journal_*`); its alarm settles executions a restart cut off.
 */
export class Programs extends DurableObject<Env> {
  readonly #host = new DemoHostModules(this.ctx.storage);
  readonly executor = new Executor(this.ctx, {
    loader: this.env.LOADER,
    modules: this.#host.modules,
    onInterrupt: "replay",
    limits: PROGRAM_LIMITS,
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
    options: { onInterrupt?: BridgeInterruptPolicy; access?: BridgeAccess; id?: string },
  ): Promise<ProgramCall<HttpExecution>> {
    try {
      return { ok: true, value: httpForm(await this.executor.execute(code, undefined, options)) };
    } catch (error) {
      if (isBridgeError(error, "bridge/conflict") && options.id !== undefined) {
        return { ok: true, value: httpForm(await this.#join(options.id)) };
      }
      return refusal(error, {});
    }
  }

  /**
   * Resumes an interrupted replay run: the interrupted call answers `value` and the run replays
   * to its end (or its next interrupt). Refused with 404 `bridge/not-found` for an unknown id,
   * 409 `bridge/conflict` for a run that is not interrupted (running, ended, resumed already), and
   * 400 for a value over the input limit.
   */
  async resumeProgram(id: string, value: unknown): Promise<ProgramCall<HttpExecution>> {
    try {
      return { ok: true, value: httpForm(await this.executor.resume(id, value)) };
    } catch (error) {
      return refusal(error, RESUME_REFUSAL_STATUS);
    }
  }

  /**
   * Waits for execution `id` to end and answers it. One left running by a previous instance of this
   * object (the server died under it) is settled now by recovery, as the alarm would.
   */
  async #join(id: string): Promise<BridgeExecution> {
    const deadline = Date.now() + JOIN_WAIT_MS;
    for (;;) {
      const record = this.executor.get(id) as BridgeExecutionRecord;
      // Past the deadline the caller gets the running record and may read it later.
      if (record.state !== "running" || Date.now() > deadline) {
        const { executionId, state, result, error, interrupt } = record;
        return {
          executionId,
          state,
          ...("result" in record ? { result } : {}),
          ...(error === undefined ? {} : { error }),
          ...(interrupt === undefined ? {} : { interrupt }),
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
  execution(executionId: string): HttpExecution<BridgeExecutionRecord> | null {
    const record = this.executor.get(executionId);
    return record === null ? null : httpForm(record);
  }

  /** What the host modules really did: for one execution, or for all of them. */
  hostCounts(executionId?: string): HostCounts {
    return this.#host.counters.read(executionId);
  }
}

/**
 * A bridge refusal as a coded 4xx outcome (`statuses` by code, else 400); anything else is rethrown.
 * @throws what it was given, when it is not a BridgeError.
 */
function refusal(error: unknown, statuses: Record<string, number>): ProgramCall<never> {
  if (!isBridgeError(error)) throw error;
  return {
    ok: false,
    status: statuses[error.code] ?? 400,
    code: error.code,
    message: error.message,
  };
}
