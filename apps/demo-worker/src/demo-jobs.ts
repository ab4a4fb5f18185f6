/// <reference lib="esnext.disposable" />
import { RpcTarget } from "cloudflare:workers";
import { handle } from "@durablekit/handle-journal";
import {
  type BridgeCallContext,
  type BridgeHostModule,
  hostModule,
  readOnlyMethods,
} from "@durablekit/rpc-bridge";
import type { HostCounters } from "./host-counters";
import { hostTypeError, revivedId } from "./host-errors";

/** How long a demo run takes unless `start({ durationMs })` says otherwise. */
const DEFAULT_RUN_MS = 50;
const MAX_RUN_MS = 10_000;

/** A job as stored: the execution whose call created it keeps its counters. */
interface JobRow {
  id: string;
  executionId: string;
  name: string;
}

/** A run as stored. */
interface RunRow {
  id: string;
  executionId: string;
  doneAt: number;
}

/**
 * The demo's job system, in its object's SQLite (`demo_jobs`, `demo_job_runs`; tables made by
 * `DemoHostModules`): jobs, their runs, and the Job and Run objects programs hold. Creating a job
 * and starting a run are keyed by the bridge call's `callId`, so a program that restarts from the
 * top (`onInterrupt: "restart"`) gets the same job and run back instead of creating new ones; a
 * replay run never calls them twice and revives its objects from their rows.
 */
export class JobStore {
  readonly #sql: SqlStorage;
  readonly counters: HostCounters;

  constructor(sql: SqlStorage, counters: HostCounters) {
    this.#sql = sql;
    this.counters = counters;
  }

  // ── Jobs ───────────────────────────────────────────────────────────────────

  /** Creates job `id` (once: a repeated id is the same job) and returns a live Job for it. */
  createJob(executionId: string, id: string, name: string): Job {
    const written = this.#sql.exec(
      "INSERT INTO demo_jobs (id, execution_id, name, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
      id,
      executionId,
      name,
      Date.now(),
    ).rowsWritten;
    if (written > 0) this.counters.bump(executionId, "creates");
    return this.#job(this.#jobRow(id) as JobRow);
  }

  /**
   * A Job for a stored job, revived by a replay (`[handle.revive]`).
   * @throws TypeError `E_JOB_NOT_FOUND` when no job has that id.
   */
  reviveJob(id: string): Job {
    const row = this.#jobRow(id);
    if (row === null) throw hostTypeError(`No job "${id}" exists.`, "E_JOB_NOT_FOUND");
    this.counters.bump(row.executionId, "revives");
    return this.#job(row);
  }

  #jobRow(id: string): JobRow | null {
    const row = this.#sql
      .exec<{ execution_id: string; name: string }>(
        "SELECT execution_id, name FROM demo_jobs WHERE id = ?",
        id,
      )
      .toArray()[0];
    return row === undefined ? null : { id, executionId: row.execution_id, name: row.name };
  }

  #job(row: JobRow): Job {
    this.counters.bump(row.executionId, "targets");
    return new Job(this, row);
  }

  // ── Runs ───────────────────────────────────────────────────────────────────

  /** Starts run `id` of a job (once: a repeated id is the same run) and returns a live Run for it. */
  startRun(job: JobRow, id: string, input: unknown, durationMs: number): Run {
    const now = Date.now();
    const written = this.#sql.exec(
      "INSERT INTO demo_job_runs (id, execution_id, job_id, input, started_at, done_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
      id,
      job.executionId,
      job.id,
      JSON.stringify(input ?? null),
      now,
      now + durationMs,
    ).rowsWritten;
    if (written > 0) this.counters.bump(job.executionId, "starts");
    return this.#run(this.#runRow(id) as RunRow, false);
  }

  /**
   * A Run for a stored run, revived by a replay (`[handle.revive]`).
   * @throws TypeError `E_RUN_NOT_FOUND` when no run has that id.
   */
  reviveRun(id: string): Run {
    const row = this.#runRow(id);
    if (row === null) throw hostTypeError(`No run "${id}" exists.`, "E_RUN_NOT_FOUND");
    this.counters.bump(row.executionId, "revives");
    return this.#run(row, true);
  }

  #runRow(id: string): RunRow | null {
    const row = this.#sql
      .exec<{ execution_id: string; done_at: number }>(
        "SELECT execution_id, done_at FROM demo_job_runs WHERE id = ?",
        id,
      )
      .toArray()[0];
    return row === undefined ? null : { id, executionId: row.execution_id, doneAt: row.done_at };
  }

  #run(row: RunRow, revived: boolean): Run {
    this.counters.bump(row.executionId, "targets");
    return new Run(this, row, revived);
  }
}

/**
 * One run of a job. `status` and `wait` are read-only. Replayable: its own JSON is `{ id }` and
 * `codemode:jobs` revives it from its row, so a program holding it across an interrupt, an eviction
 * or a restart waits on the same run.
 */
export class Run extends RpcTarget {
  static readonly [handle.kind] = "Run";
  readonly #jobs: JobStore;
  readonly #row: RunRow;
  /** Made by `[handle.revive]`, not by the call that started the run. */
  readonly #revived: boolean;

  constructor(jobs: JobStore, row: RunRow, revived: boolean) {
    super();
    this.#jobs = jobs;
    this.#row = row;
    this.#revived = revived;
  }

  /** `{ id, status }`: `"running"` until the run is done, then `"succeeded"`. */
  status(): { id: string; status: "running" | "succeeded" } {
    return { id: this.#row.id, status: Date.now() >= this.#row.doneAt ? "succeeded" : "running" };
  }

  /** Waits until the run is done, or until `options.signal` or the call's own deadline aborts. */
  async wait(
    [options]: [{ signal?: AbortSignal } | undefined],
    ctx: BridgeCallContext,
  ): Promise<{ id: string; status: "succeeded" }> {
    this.#jobs.counters.bump(this.#row.executionId, "waits");
    if (this.#revived) this.#jobs.counters.bump(this.#row.executionId, "revivedWaits");
    const signal = options?.signal ? AbortSignal.any([options.signal, ctx.signal]) : ctx.signal;
    const remaining = this.#row.doneAt - Date.now();
    if (remaining > 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, remaining);
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
    return { id: this.#row.id, status: "succeeded" };
  }

  [handle.serialize](): { id: string } {
    return { id: this.#row.id };
  }

  [Symbol.dispose](): void {
    this.#jobs.counters.bump(this.#row.executionId, "disposals");
  }
}

/** A job. `start` is a write; `info` is read-only. Replayable like {@link Run}. */
export class Job extends RpcTarget {
  static readonly [handle.kind] = "Job";
  readonly #jobs: JobStore;
  readonly #row: JobRow;

  constructor(jobs: JobStore, row: JobRow) {
    super();
    this.#jobs = jobs;
    this.#row = row;
  }

  /** `{ id, name }`. */
  info(): { id: string; name: string } {
    return { id: this.#row.id, name: this.#row.name };
  }

  /** Starts a run with `input` (`durationMs` sets how long it takes, default 50). */
  start([input]: [{ durationMs?: number } | undefined], ctx: BridgeCallContext): Run {
    const requested = input?.durationMs;
    const durationMs =
      typeof requested === "number" && requested >= 0
        ? Math.min(requested, MAX_RUN_MS)
        : DEFAULT_RUN_MS;
    return this.#jobs.startRun(this.#row, `run:${ctx.callId}`, input, durationMs);
  }

  [handle.serialize](): { id: string } {
    return { id: this.#row.id };
  }

  [Symbol.dispose](): void {
    this.#jobs.counters.bump(this.#row.executionId, "disposals");
  }
}

readOnlyMethods(Run, "status", "wait");
readOnlyMethods(Job, "info");

/**
 * The `codemode:jobs` host module: `createJob({ name })` → `Job` → `start(input)` → `Run` with
 * `wait({ signal })` and `status()`. One module, no source half, no `{ ok }` outcomes: a bad
 * argument throws a TypeError with a `code` the program catches as is. Its `[handle.revive]` map
 * turns a journaled `{ id }` back into a Job or Run, so replay runs may hold them.
 */
export function jobsModule(jobs: JobStore): BridgeHostModule {
  return hostModule(
    {
      createJob: ([options]: [{ name?: unknown } | undefined], ctx: BridgeCallContext): Job => {
        const name = options?.name;
        if (typeof name !== "string" || name.length === 0 || name.length > 200) {
          throw hostTypeError(
            "createJob takes { name: string } (1–200 characters).",
            "E_JOB_OPTIONS",
          );
        }
        return jobs.createJob(ctx.executionId, `job:${ctx.callId}`, name);
      },
      [handle.revive]: {
        Job: (value: unknown) => jobs.reviveJob(revivedId(value, "Job")),
        Run: (value: unknown) => jobs.reviveRun(revivedId(value, "Run")),
      },
    },
    {
      description: "Create jobs and run them.",
      exports: { createJob: "(options: { name: string }): Promise<Job>" },
      classes: {
        Job: {
          class: Job,
          description: "A job that can be started.",
          methods: {
            info: "(): Promise<{ id: string; name: string }>",
            start: "(input?: { durationMs?: number }): Promise<Run>",
          },
        },
        Run: {
          class: Run,
          description: "One run of a job.",
          methods: {
            status: '(): Promise<{ id: string; status: "running" | "succeeded" }>',
            wait: '(options?: { signal?: AbortSignal }): Promise<{ id: string; status: "succeeded" }>',
          },
        },
      },
    },
  );
}
