import { migrateSchema } from "@durablekit/compose";
import { type BridgeCallContext, type BridgeModuleMap, hostModule } from "@durablekit/rpc-bridge";
import { JobStore, jobsModule } from "./demo-jobs";
import { ProcessStore, processModule } from "./demo-process";
import { HostCounters } from "./host-counters";
import { hostTypeError } from "./host-errors";

/** The longest `approval(reason)`. */
const MAX_REASON_LENGTH = 1_000;

/**
 * The demo host modules' tables, by schema version (`dk_demo_host_meta`). Version 1 is what the
 * jobs module kept before replay (made as it was, so an existing `.dev-state` carries on);
 * version 2 records the execution of each job and run, counts per execution, and adds processes.
 */
const HOST_SCHEMA: string[][] = [
  [
    "CREATE TABLE IF NOT EXISTS demo_jobs (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL)",
    `CREATE TABLE IF NOT EXISTS demo_job_runs (id TEXT PRIMARY KEY, job_id TEXT NOT NULL, input TEXT NOT NULL,
      started_at INTEGER NOT NULL, done_at INTEGER NOT NULL)`,
    "CREATE TABLE IF NOT EXISTS demo_job_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
  ],
  [
    "ALTER TABLE demo_jobs ADD COLUMN execution_id TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE demo_job_runs ADD COLUMN execution_id TEXT NOT NULL DEFAULT ''",
    `CREATE TABLE demo_host_counters (execution_id TEXT NOT NULL, name TEXT NOT NULL, n INTEGER NOT NULL,
      PRIMARY KEY (execution_id, name)) WITHOUT ROWID`,
    "INSERT INTO demo_host_counters (execution_id, name, n) SELECT '', name, value FROM demo_job_counters",
    "DROP TABLE demo_job_counters",
    `CREATE TABLE demo_processes (id TEXT PRIMARY KEY, execution_id TEXT NOT NULL, command TEXT NOT NULL,
      output TEXT NOT NULL, exit_code INTEGER NOT NULL, cursor INTEGER NOT NULL)`,
    `CREATE TABLE demo_process_reads (call_id TEXT PRIMARY KEY, process_id TEXT NOT NULL,
      start INTEGER NOT NULL, end INTEGER NOT NULL)`,
  ],
];

/**
 * The host modules programs of the demo import, over one object's SQLite:
 *
 * - `codemode:jobs`: `createJob` → `Job` → `start` → `Run` (`wait`, `status`), replayable;
 * - `codemode:approval`: `approval(reason?)` interrupts the run (`ctx.interrupt({ reason })`); in a
 *   replay run, `resume(id, value)` makes `value` its answer;
 * - `codemode:process`: `spawn(command)` → `Process` whose `read()` returns bounded, journaled chunks.
 *
 * `counters` says what they really did, per execution.
 */
export class DemoHostModules {
  readonly counters: HostCounters;
  readonly jobs: JobStore;
  readonly processes: ProcessStore;
  /** The `modules` option of an `Executor`. */
  readonly modules: BridgeModuleMap;

  constructor(storage: DurableObjectStorage) {
    migrateSchema(storage, { table: "demo_host", steps: HOST_SCHEMA });
    this.counters = new HostCounters(storage.sql);
    this.jobs = new JobStore(storage.sql, this.counters);
    this.processes = new ProcessStore(storage, this.counters);
    const counters = this.counters;
    this.modules = {
      "codemode:jobs": jobsModule(this.jobs),
      "codemode:approval": hostModule(
        {
          approval: ([reason]: [unknown], ctx: BridgeCallContext): Promise<unknown> => {
            if (
              reason !== undefined &&
              (typeof reason !== "string" || reason.length > MAX_REASON_LENGTH)
            ) {
              throw hostTypeError(
                `approval takes an optional reason (a string of at most ${MAX_REASON_LENGTH} characters).`,
                "E_APPROVAL_REASON",
              );
            }
            counters.bump(ctx.executionId, "approvals");
            return ctx.interrupt({ reason: reason ?? null });
          },
        },
        {
          description:
            "Ask a person: the run is released until it is resumed (POST /programs/:id/resume), whose value is the answer.",
          exports: { approval: "(reason?: string): Promise<unknown>" },
        },
      ),
      "codemode:process": processModule(this.processes),
    };
  }
}
