import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { type TaskStep, Tasks } from "@durablekit/tasks";
import type { Env } from "./env";

/** Input of `demo.shard@v1`: the child's position in its fan-out, and how long its work takes. */
export interface ShardInput {
  i: number;
  ms: number;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** What one shard's child run answers. */
export interface ShardResult {
  i: number;
  square: number;
}

/**
 * A shard object (binding `SHARD`, one per name `shard-<n>`): the child runs of `demo.fanout@v1`
 * run here, each a `work` step that counts its real executions in this object's own SQLite
 * (`demo_shard_work`), waits `ms` and answers `i²`. Its settlements go back to the workspace through
 * its outbox, retried by its alarm until acknowledged.
 */
export class Shard extends DurableObject<Env> {
  readonly tasks: Tasks;
  readonly alarms: Alarms;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS demo_shard_work (run_id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
    );
    this.tasks = new Tasks(ctx, {
      definitions: {
        "demo.shard@v1": async (input: ShardInput, step: TaskStep): Promise<ShardResult> =>
          step.do("work", async ({ signal }) => {
            ctx.storage.sql.exec(
              "INSERT INTO demo_shard_work (run_id, n) VALUES (?, 1) ON CONFLICT (run_id) DO UPDATE SET n = n + 1",
              step.runId,
            );
            if (input.ms > 0) await pause(input.ms, signal);
            return { i: input.i, square: input.i * input.i };
          }),
      },
      claimTimeoutMs: 3_000,
      children: { namespaces: env, self: "SHARD" },
    });
    this.alarms = new Alarms(ctx, { parts: [this.tasks] });
  }

  override alarm(): Promise<void> {
    return this.alarms.alarm();
  }

  /** The one RPC entry of child runs: starts, cancels (and settlements, were it a parent). */
  receiveTasks(message: unknown): Promise<unknown> {
    return this.tasks.receive(message);
  }

  /** `GET /debug/shards/:name`: the real executions of each run's work step, and the messages still owed. */
  debugState(): { runs: number; work: Record<string, number>; outbox: number } {
    const sql = this.ctx.storage.sql;
    const work: Record<string, number> = {};
    for (const row of sql.exec<{ run_id: string; n: number }>(
      "SELECT run_id, n FROM demo_shard_work",
    )) {
      work[row.run_id] = row.n;
    }
    return {
      runs: sql.exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_runs").one().n,
      work,
      outbox: sql.exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_outbox").one().n,
    };
  }
}
