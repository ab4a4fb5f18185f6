import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { Inspector, inspectorResponse } from "@durablekit/inspect";
import { Executor } from "@durablekit/rpc-bridge";
import { DurableStreamsHandler, DurableStreamsReceiver, sseResponse } from "@durablekit/sse";
import { Streams } from "@durablekit/streams";
import {
  type TaskReceipt,
  type TaskRunOptions,
  type TaskRunSnapshot,
  type TaskScheduleSnapshot,
  type TaskStepSnapshot,
  Tasks,
} from "@durablekit/tasks";
import {
  checkInput,
  countStream,
  type DemoDefinition,
  type DemoTaskHost,
  demoTaskDefinitions,
  type FanoutResult,
  failure,
  programExecutionId,
  runNotFound,
  streamTaken,
  type TaskCall,
  taskCall,
} from "./demo-tasks";
import type { Env } from "./env";
import { FEED_SUBSCRIPTION, FEED_WEBHOOK_URL, readFeed } from "./feeds";
import type { HostCounts } from "./host-counts";
import { DemoHostModules } from "./host-modules";
import { errorResponse } from "./http";
import { PROGRAM_LIMITS } from "./programs";
import { HUB_NAME, PROTOCOL_BASE_PATH, RUN_EVENTS_PREFIX } from "./protocol-stream";

/** How long `GET /streams/:id/sse` waits for a stream that does not exist yet, unless `DEMO_SSE_WAIT_MS` says otherwise. */
const DEFAULT_SSE_WAIT_MS = 10_000;

/** A fan-out's fan-in so far (`GET /fanout/:runId`). */
export interface FanoutStatus {
  runId: string;
  state: string;
  /** Children the run starts in all. */
  children: number;
  /** Children started so far. */
  started: number;
  /** Children whose settlement arrived. */
  settled: number;
  /** Messages the workspace still owes other objects (cancels). */
  owed: number;
  result?: FanoutResult;
  error?: unknown;
}

/** The name of the one workspace object that answers workspace-wide routes. */
export const WORKSPACE_NAME = "default";

/**
 * The demo's workspace Durable Object: it composes the durablekit parts (streams, tasks, …) over its
 * one SQLite database and shares its one alarm between them.
 */
export class Workspace extends DurableObject<Env> implements DemoTaskHost {
  readonly streams = new Streams(this.ctx);
  readonly #host = new DemoHostModules(this.ctx.storage);
  /** Runs the programs of `demo.program@v1` runs, journaled in their runs' step journals. */
  readonly executor = new Executor(this.ctx, {
    loader: this.env.LOADER,
    modules: this.#host.modules,
    limits: PROGRAM_LIMITS,
  });
  // A short claim timeout: a run whose isolate died (a crash, a deploy) resumes seconds later.
  readonly tasks = new Tasks(this.ctx, {
    definitions: demoTaskDefinitions(this),
    claimTimeoutMs: 3_000,
    maxValueBytes: 65_536,
    // `demo.fanout@v1` starts its children in the shard objects; they answer through WORKSPACE.
    children: { namespaces: this.env, self: "WORKSPACE" },
    onEvent: (event) => {
      if (event.type === "task:failed") this.#endRunStream(event.runId, event.error.message);
      if (event.type === "task:cancelled") this.#endRunStream(event.runId, event.reason);
    },
  });
  /**
   * The Durable Streams protocol over this object, for its runs' events: read-only, at
   * `/v1/stream/runs/<runId>` (catch-up, long-poll, SSE; closed once the run settled).
   */
  readonly #protocol = new DurableStreamsHandler(this.ctx, {
    streams: this.streams,
    basePath: PROTOCOL_BASE_PATH,
    sources: { [RUN_EVENTS_PREFIX]: this.tasks.events },
  });
  readonly alarms = new Alarms(this.ctx, {
    parts: [this.tasks, this.streams, this.executor, this.#protocol],
  });
  /**
   * The feed subscription's webhooks (signed by the hub): each batch appended to a `feed/*` stream
   * starts one `demo.feed@v1` run, keyed by stream and seq (`tasks.trigger`), so a delivery that
   * comes again starts nothing.
   */
  readonly #feed = new DurableStreamsReceiver(this.ctx, {
    jwks: () => this.env.SUBSCRIPTIONS.getByName(HUB_NAME).jwks(),
    subscriptions: [FEED_SUBSCRIPTION],
    onBatch: (batch) =>
      this.tasks.trigger("demo.feed@v1", { source: batch.stream, from: batch.from, to: batch.to }),
  });
  /** `GET /inspect/`: what the object's parts hold, shown only with `DEMO_DEBUG=on`. */
  readonly inspector = new Inspector(this.ctx, {
    parts: [this.tasks, this.executor, this.streams],
  });

  override alarm() {
    return this.alarms.alarm();
  }

  /** A webhook of the feed subscription, from the hub (its signature header and body). */
  async receiveFeed(notification: {
    signature: string | null;
    body: string;
  }): Promise<{ status: number; body: string }> {
    const headers = new Headers({ "content-type": "application/json" });
    if (notification.signature !== null) headers.set("webhook-signature", notification.signature);
    const answer = await this.#feed.fetch(
      new Request(FEED_WEBHOOK_URL, { method: "POST", headers, body: notification.body }),
    );
    return { status: answer.status, body: await answer.text() };
  }

  /** `demo.feed@v1`'s read of its batch. */
  readFeed(source: string, from: number, to: number): Promise<unknown[]> {
    return readFeed(this.env, source, from, to);
  }

  /** The runs the feed started, newest first, a page at a time (`GET /feeds`). */
  feedRuns(cursor?: string): Promise<TaskCall<{ items: TaskRunSnapshot[]; next: string | null }>> {
    return taskCall(() => {
      const page = this.tasks.list({
        definition: "demo.feed@v1",
        limit: 1000,
        ...(cursor === undefined ? {} : { cursor }),
      });
      return { items: page.items, next: page.next };
    });
  }

  /** What the inspector's live feeds cost this instance: reads, and how feeds ended. */
  readonly #feeds = { reads: 0, ended: { final: 0, "max-live": 0, disconnected: 0 } };

  /** Serves the inspector below `/inspect`; the object itself refuses unless `DEMO_DEBUG=on`. */
  inspect(request: Request): Promise<Response> {
    return inspectorResponse(request, this.inspector, {
      basePath: "/inspect",
      authorize: () => this.env.DEMO_DEBUG === "on",
      onEvent: (event) => {
        if (event.type === "inspect:live:read") this.#feeds.reads += 1;
        else this.#feeds.ended[event.reason] += 1;
      },
    });
  }

  /** `GET /debug/inspect/feeds`: the live feeds' reads and endings since this instance started. */
  inspectFeeds(): { reads: number; ended: Record<"final" | "max-live" | "disconnected", number> } {
    if (this.env.DEMO_DEBUG !== "on") throw new Error("The inspector is off (DEMO_DEBUG).");
    return { reads: this.#feeds.reads, ended: { ...this.#feeds.ended } };
  }

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS demo_health (id INTEGER PRIMARY KEY CHECK (id = 1), checks INTEGER NOT NULL)",
    );
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS demo_task_executions (run_id TEXT NOT NULL, step TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (run_id, step)) WITHOUT ROWID",
    );
  }

  /** Records one health check in SQLite and reads it back; `ok` is true when both worked. */
  health(): { ok: boolean; checks: number } {
    const sql = this.ctx.storage.sql;
    const row = sql
      .exec<{ checks: number }>(
        "INSERT INTO demo_health (id, checks) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET checks = checks + 1 RETURNING checks",
      )
      .one();
    return { ok: row.checks > 0, checks: row.checks };
  }

  countExecution(runId: string, step: string): void {
    this.ctx.storage.sql.exec(
      "INSERT INTO demo_task_executions (run_id, step, n) VALUES (?, ?, 1) ON CONFLICT (run_id, step) DO UPDATE SET n = n + 1",
      runId,
      step,
    );
  }

  /** Starts a run of a demo definition (`POST /tasks/:definition`). */
  async startTask(
    definition: string,
    body: { input?: unknown } & Pick<TaskRunOptions, "idempotencyKey" | "runId">,
  ): Promise<TaskCall<Pick<TaskReceipt, "runId" | "accepted" | "state">>> {
    const problem = checkInput(definition, body.input);
    if (problem) return failure(400, "demo/invalid-input", problem);
    const stream = countStream(definition, body.input);
    // One run writes a stream and closes it when it ends: a new run may not reuse its id (a retry
    // that joins the run that wrote it may).
    if (stream !== null && this.streams.status(stream) !== null) {
      const joins = await taskCall(() => this.#joinsRun(body));
      if (!joins.ok) return joins;
      if (!joins.value) return streamTaken(stream);
    }
    return taskCall(async () => {
      const receipt = await this.tasks.run(definition as DemoDefinition, body.input as never, {
        ...(body.idempotencyKey === undefined ? {} : { idempotencyKey: body.idempotencyKey }),
        ...(body.runId === undefined ? {} : { runId: body.runId }),
        ...(stream === null ? {} : { metadata: { stream } }),
      });
      return { runId: receipt.runId, accepted: receipt.accepted, state: receipt.state };
    });
  }

  /** True when a start request names a run that exists (by run id or idempotency key). */
  #joinsRun(body: Pick<TaskRunOptions, "idempotencyKey" | "runId">): boolean {
    return (
      (body.runId !== undefined && this.tasks.get(body.runId) !== null) ||
      (body.idempotencyKey !== undefined &&
        this.tasks.getByIdempotencyKey(body.idempotencyKey) !== null)
    );
  }

  /**
   * Ends the stream of a `demo.count@v1` run that failed or was cancelled as errored, so its readers
   * end too (a completed run closed it in its last step). Creates it if no step did.
   */
  #endRunStream(runId: string, reason: string | null): void {
    const metadata = this.tasks.get(runId)?.metadata as { stream?: unknown } | undefined;
    if (typeof metadata?.stream !== "string") return;
    this.streams.open(metadata.stream).error(reason ?? "The run was cancelled.");
  }

  /** A run's snapshot and its journal (`GET /tasks/:runId`). */
  getTask(runId: string): TaskCall<TaskRunSnapshot & { steps: TaskStepSnapshot[] }> {
    const run = this.tasks.get(runId);
    if (!run) return runNotFound(runId);
    return { ok: true, value: { ...run, steps: this.tasks.steps(runId) ?? [] } };
  }

  /** The one RPC entry of child runs: the shards' settlements of `demo.fanout@v1`'s children. */
  receiveTasks(message: unknown): Promise<unknown> {
    return this.tasks.receive(message);
  }

  /**
   * A fan-out's fan-in so far (`GET /fanout/:runId`): the run's state, how many children it has
   * started and how many of them settled, and its result once completed.
   */
  fanout(runId: string): TaskCall<FanoutStatus> {
    const run = this.tasks.get(runId);
    if (run?.definition !== "demo.fanout@v1") return runNotFound(runId);
    const children = this.tasks.children(runId) ?? [];
    const input = this.tasks.history(runId)?.input as { children?: number } | undefined;
    return {
      ok: true,
      value: {
        runId,
        state: run.state,
        children: input?.children ?? children.length,
        // A child is started once its object answered the start (before, it is only an intent).
        started: children.filter((child) => child.state !== "starting").length,
        settled: children.filter((child) => child.state !== "starting" && child.state !== "running")
          .length,
        owed: this.ctx.storage.sql
          .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_outbox")
          .one().n,
        ...(run.state === "completed" ? { result: run.result as FanoutResult } : {}),
        ...(run.state === "failed" ? { error: run.error } : {}),
      },
    };
  }

  /**
   * Adds (or replaces) a cron schedule of `demo.tick@v1` (`POST /schedules`): each tick starts one
   * run, from this object's alarm.
   */
  async addSchedule(body: {
    id: string;
    cron: string;
    timezone?: string;
  }): Promise<TaskCall<TaskScheduleSnapshot>> {
    return taskCall(() =>
      this.tasks.schedule("demo.tick@v1", {
        id: body.id,
        cron: body.cron,
        input: { schedule: body.id },
        ...(body.timezone === undefined ? {} : { timezone: body.timezone }),
      }),
    );
  }

  /** The object's schedules (`GET /schedules`). */
  listSchedules(): TaskCall<{ items: TaskScheduleSnapshot[] }> {
    return { ok: true, value: { items: this.tasks.schedules() } };
  }

  /** Removes a schedule (`POST /schedules/:id/delete`); `deleted` is false for an unknown id. */
  removeSchedule(id: string): Promise<TaskCall<{ deleted: boolean }>> {
    return taskCall(() => ({ deleted: this.tasks.unschedule(id) }));
  }

  /** Cancels a run (`POST /tasks/:runId/cancel`); `cancelled` is false for a settled run. */
  async cancelTask(runId: string, reason?: string): Promise<TaskCall<{ cancelled: boolean }>> {
    if (!this.tasks.get(runId)) return runNotFound(runId);
    return taskCall(async () => ({ cancelled: await this.tasks.cancel(runId, reason) }));
  }

  /** Delivers an event to a run (`POST /tasks/:runId/events/:type`). */
  sendTaskEvent(
    runId: string,
    type: string,
    payload: unknown,
  ): Promise<TaskCall<{ result: "delivered" | "buffered" }>> {
    return taskCall(async () => ({ result: await this.tasks.sendEvent(runId, type, payload) }));
  }

  /** Real executions per step of a run (`GET /debug/executions/:runId`), or null for no such run. */
  taskExecutions(runId: string): Record<string, number> | null {
    if (!this.tasks.get(runId)) return null;
    const out: Record<string, number> = {};
    for (const row of this.ctx.storage.sql.exec<{ step: string; n: number }>(
      "SELECT step, n FROM demo_task_executions WHERE run_id = ?",
      runId,
    )) {
      out[row.step] = row.n;
    }
    return out;
  }

  /**
   * What the host modules really did for the program of a `demo.program@v1` run
   * (`GET /debug/executions/:runId/jobs`), or null for no such run.
   */
  programHostCounts(runId: string): HostCounts | null {
    if (!this.tasks.get(runId)) return null;
    return this.#host.counters.read(programExecutionId(runId));
  }

  /**
   * How many events are buffered for a run (`GET /debug/executions/:runId/buffered-events`), read
   * from the tasks package's `dk_tasks_events` table (see its DESIGN.md), or null for no such run.
   */
  bufferedEvents(runId: string): { count: number; bytes: number } | null {
    if (!this.tasks.get(runId)) return null;
    return this.ctx.storage.sql
      .exec<{ count: number; bytes: number }>(
        "SELECT COUNT(*) AS count, COALESCE(SUM(LENGTH(payload)), 0) AS bytes FROM dk_tasks_events WHERE run_id = ?",
        runId,
      )
      .one();
  }

  /**
   * `GET /streams/:id/sse`: a stream of this object as Server-Sent Events, from the request's
   * `Last-Event-ID` (+1) or `?from=N`, tailing until the stream settles. A subscriber who arrives
   * before the stream exists waits for it (`DEMO_SSE_WAIT_MS`, default 10 s); then a 404
   * `demo/stream-not-found`. `corsOrigins` may read it from other origins.
   */
  async streamSse(streamId: string, request: Request, corsOrigins: string[]): Promise<Response> {
    const waitMs = Number(this.env.DEMO_SSE_WAIT_MS ?? DEFAULT_SSE_WAIT_MS);
    const waitForStreamMs = Number.isFinite(waitMs) && waitMs >= 0 ? waitMs : DEFAULT_SSE_WAIT_MS;
    const response = await sseResponse(this.streams, streamId, {
      request,
      waitForStreamMs,
      ...(corsOrigins.length === 0 ? {} : { cors: { origin: corsOrigins } }),
    });
    if (response.status !== 404) return response;
    await response.body?.cancel();
    const answer = errorResponse(
      404,
      "demo/stream-not-found",
      `No stream "${streamId}" exists (waited ${waitForStreamMs} ms for it to be created); start a run that writes it, e.g. POST /tasks/demo.count@v1 with { "input": { "steps": 5, "stream": ${JSON.stringify(streamId)} } }.`,
    );
    for (const name of ["access-control-allow-origin", "vary"]) {
      const value = response.headers.get(name);
      if (value !== null) answer.headers.set(name, value);
    }
    return answer;
  }

  /**
   * `GET /tasks/:runId/events`: a run's lifecycle (`tasks.events`) as Server-Sent Events, from the
   * request's `Last-Event-ID` (+1) or `?from=N`, tailing until the run settles; a 404
   * `tasks/not-found` for an unknown run. `corsOrigins` may read it from other origins.
   */
  async taskEventsSse(runId: string, request: Request, corsOrigins: string[]): Promise<Response> {
    const response = sseResponse(this.tasks.events, runId, {
      request,
      ...(corsOrigins.length === 0 ? {} : { cors: { origin: corsOrigins } }),
    });
    if (response.status !== 404) return response;
    await response.body?.cancel();
    const answer = errorResponse(
      404,
      "tasks/not-found",
      `No run "${runId}" exists; check the run id (POST /tasks/:definition answers it).`,
    );
    for (const name of ["access-control-allow-origin", "vary"]) {
      const value = response.headers.get(name);
      if (value !== null) answer.headers.set(name, value);
    }
    return answer;
  }

  /** `/v1/stream/runs/<runId>`: a run's events through the Durable Streams protocol (read-only). */
  runEventsProtocol(request: Request): Promise<Response> {
    return this.#protocol.fetch(request);
  }

  /** A stream's chunks, state and cursor (`GET /debug/streams/:streamId`), or null. */
  streamChunks(
    streamId: string,
  ): { state: string; cursor: number; chunks: Array<{ seq: number; chunk: unknown }> } | null {
    const status = this.streams.status(streamId);
    if (!status) return null;
    const page = this.streams.readPage(streamId, { from: 0, limit: 1_000 });
    return { state: status.state, cursor: status.cursor, chunks: page.chunks };
  }
}
