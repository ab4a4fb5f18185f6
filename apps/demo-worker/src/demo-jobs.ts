/// <reference lib="esnext.disposable" />
import { RpcTarget } from "cloudflare:workers";
import { type BridgeCallContext, hostModule, readOnlyMethods } from "@durablekit/rpc-bridge";

/** Counters of what the jobs module really did, for `GET /debug/jobs`. */
export interface JobCounters {
  creates: number;
  starts: number;
  waits: number;
  disposals: number;
}

/** How long a demo run takes unless `start({ durationMs })` says otherwise. */
const DEFAULT_RUN_MS = 50;
const MAX_RUN_MS = 10_000;

/**
 * The demo's job system, in the programs object's SQLite: jobs, their runs, and counters. Creating
 * a job and starting a run are keyed by the bridge call's `callId`, so a program that restarts from
 * the top (`onInterrupt: "restart"`) gets the same job and run back instead of creating new ones.
 */
export class JobStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(`CREATE TABLE IF NOT EXISTS demo_jobs (
      id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS demo_job_runs (
      id TEXT PRIMARY KEY, job_id TEXT NOT NULL, input TEXT NOT NULL,
      started_at INTEGER NOT NULL, done_at INTEGER NOT NULL)`);
    sql.exec(
      "CREATE TABLE IF NOT EXISTS demo_job_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    );
  }

  #count(name: keyof JobCounters): void {
    this.#sql.exec(
      "INSERT INTO demo_job_counters (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1",
      name,
    );
  }

  /** Creates job `id` (once: a repeated id is the same job). */
  create(id: string, name: string): void {
    const written = this.#sql.exec(
      "INSERT INTO demo_jobs (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
      id,
      name,
      Date.now(),
    ).rowsWritten;
    if (written > 0) this.#count("creates");
  }

  /** Starts run `id` of a job (once: a repeated id is the same run); returns when it is done. */
  start(id: string, jobId: string, input: unknown, durationMs: number): number {
    const now = Date.now();
    const written = this.#sql.exec(
      "INSERT INTO demo_job_runs (id, job_id, input, started_at, done_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
      id,
      jobId,
      JSON.stringify(input ?? null),
      now,
      now + durationMs,
    ).rowsWritten;
    if (written > 0) this.#count("starts");
    return this.#sql
      .exec<{ done_at: number }>("SELECT done_at FROM demo_job_runs WHERE id = ?", id)
      .one().done_at;
  }

  /** Counts a wait. */
  waited(): void {
    this.#count("waits");
  }

  /** Counts a disposal of a Job or Run object. */
  disposed(): void {
    this.#count("disposals");
  }

  counters(): JobCounters {
    const out: JobCounters = { creates: 0, starts: 0, waits: 0, disposals: 0 };
    for (const row of this.#sql.exec<{ name: keyof JobCounters; value: number }>(
      "SELECT name, value FROM demo_job_counters",
    )) {
      out[row.name] = row.value;
    }
    return out;
  }
}

/** One run of a job. `status` and `wait` are read-only. */
export class Run extends RpcTarget {
  readonly #store: JobStore;
  readonly #id: string;
  readonly #doneAt: number;

  constructor(store: JobStore, id: string, doneAt: number) {
    super();
    this.#store = store;
    this.#id = id;
    this.#doneAt = doneAt;
  }

  /** `{ id, status }`: `"running"` until the run is done, then `"succeeded"`. */
  status(): { id: string; status: "running" | "succeeded" } {
    return { id: this.#id, status: Date.now() >= this.#doneAt ? "succeeded" : "running" };
  }

  /** Waits until the run is done, or until `options.signal` or the call's own deadline aborts. */
  async wait(
    [options]: [{ signal?: AbortSignal } | undefined],
    ctx: BridgeCallContext,
  ): Promise<{ id: string; status: "succeeded" }> {
    this.#store.waited();
    const signal = options?.signal ? AbortSignal.any([options.signal, ctx.signal]) : ctx.signal;
    const remaining = this.#doneAt - Date.now();
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
    return { id: this.#id, status: "succeeded" };
  }

  [Symbol.dispose](): void {
    this.#store.disposed();
  }
}

/** A job. `start` is a write; `info` is read-only. */
export class Job extends RpcTarget {
  readonly #store: JobStore;
  readonly #id: string;
  readonly #name: string;

  constructor(store: JobStore, id: string, name: string) {
    super();
    this.#store = store;
    this.#id = id;
    this.#name = name;
  }

  /** `{ id, name }`. */
  info(): { id: string; name: string } {
    return { id: this.#id, name: this.#name };
  }

  /** Starts a run with `input` (`durationMs` sets how long it takes, default 50). */
  start([input]: [{ durationMs?: number } | undefined], ctx: BridgeCallContext): Run {
    const requested = input?.durationMs;
    const durationMs =
      typeof requested === "number" && requested >= 0
        ? Math.min(requested, MAX_RUN_MS)
        : DEFAULT_RUN_MS;
    const runId = `run:${ctx.callId}`;
    const doneAt = this.#store.start(runId, this.#id, input, durationMs);
    return new Run(this.#store, runId, doneAt);
  }

  [Symbol.dispose](): void {
    this.#store.disposed();
  }
}

readOnlyMethods(Run, "status", "wait");
readOnlyMethods(Job, "info");

/**
 * The `codemode:jobs` host module: `createJob({ name })` → `Job` → `start(input)` → `Run` with
 * `wait({ signal })` and `status()`. One module, no source half, no `{ ok }` outcomes: a bad
 * argument throws a TypeError with a `code` the program catches as is.
 */
export function jobsModule(store: JobStore) {
  return hostModule(
    {
      createJob: ([options]: [{ name?: unknown } | undefined], ctx: BridgeCallContext): Job => {
        const name = options?.name;
        if (typeof name !== "string" || name.length === 0 || name.length > 200) {
          throw Object.assign(
            new TypeError("createJob takes { name: string } (1–200 characters)."),
            {
              code: "E_JOB_OPTIONS",
            },
          );
        }
        const id = `job:${ctx.callId}`;
        store.create(id, name);
        return new Job(store, id, name);
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
