import { isDurableKitError, isWellFormedName, utf8ByteLength } from "@durablekit/compose";
import type { StreamStatus } from "@durablekit/streams";
import { check } from "./arguments";
import { DEFAULT_MAX_VALUE_BYTES, DEFAULT_MAX_VIEW_BYTES, ValueBudget } from "./bounds";
import { InspectError } from "./errors";
import { type InspectedParts, inspectedParts } from "./parts";
import { callsOf, executionsOf, executionViewOf } from "./programs";
import { runOf, runViewOf } from "./runs";
import {
  INSPECT_SHAPE_VERSION,
  type InspectChatTurn,
  type InspectChatTurnView,
  type InspectChunk,
  type InspectCounts,
  type InspectExecution,
  type InspectExecutionView,
  type InspectOverview,
  type InspectPage,
  type InspectPartKind,
  type InspectRun,
  type InspectRunState,
  type InspectRunView,
  type InspectStream,
  type InspectStreamView,
  type InspectValueView,
} from "./shape";

/** The most streams an overview counts by state, and the most runs it counts in each state. */
const COUNT_LIMIT = 1000;
/** The most schedules an overview lists. */
const SCHEDULES_SHOWN = 100;
/** Subscriptions the overview shows (the first by id). */
const SUBSCRIPTIONS_SHOWN = 100;
/** Chunks a stream view reads at a time while its page has bytes to spare. */
const CHUNK_BATCH = 8;
/** Longest id the parts accept (docs/composing.md, "Names"). */
const MAX_ID = 256;
const STATES = ["streaming", "completed", "errored"] as const;

/** Options of the {@link Inspector} constructor. */
export interface InspectOptions {
  /**
   * The object's parts to read: its `Tasks`, `Executor`, `Streams`, `ChatTurns` and
   * `DurableStreamsSubscriptions` (a subscription hub), in any order.
   */
  parts: readonly object[];
  /**
   * A value larger than this (UTF-8 bytes of its JSON) is shown as an `InspectTruncated` record: its
   * size, the start of its JSON and the path of the whole (`value(path)`). Default 16 KiB.
   */
  maxValueBytes?: number;
  /**
   * The values one view shows, in all: past it every value is truncated, and a page of chunks ends.
   * Default 256 KiB.
   */
  maxViewBytes?: number;
}

/** Filters and paging of {@link Inspector.executions}. */
export interface InspectExecutionListOptions {
  /** Only executions in this state (or these states). */
  state?: InspectExecution["state"] | InspectExecution["state"][];
  /** Page size, 1–1000. Default 50. */
  limit?: number;
  /** The `next` token of the previous page. */
  cursor?: string;
}

/** Filters and paging of {@link Inspector.runs}. */
export interface InspectRunListOptions {
  /** Only runs in this state (or these states). */
  state?: InspectRunState | InspectRunState[];
  /** Only runs of this definition (`"order@v1"`). */
  definition?: string;
  /** Only runs created after this time (epoch milliseconds, exclusive). */
  createdAfter?: number;
  /** Only runs created before this time (epoch milliseconds, exclusive). */
  createdBefore?: number;
  /** Page size, 1–1000. Default 50. */
  limit?: number;
  /** The `next` token of the previous page. */
  cursor?: string;
}

/** Filters and paging of {@link Inspector.streams} and {@link Inspector.chatTurns}. */
export interface InspectListOptions {
  /** Only items in this state (or these states). */
  state?: InspectStream["state"] | InspectStream["state"][];
  /** Only streams with this tag (streams only). */
  tag?: string;
  /** Page size, 1–1000. Default 50. */
  limit?: number;
  /** The `next` token of the previous page. */
  cursor?: string;
}

/** Paging of {@link Inspector.stream}'s chunks and {@link Inspector.chatTurn}'s. */
export interface InspectChunkOptions {
  /** The first chunk to show (a stream's seq, a turn's chunk index). Default 0. */
  from?: number;
  /**
   * Most chunks: 1–1000 for a stream (default 100), 1–10,000 for a chat turn (default 1,000). A
   * page also ends when its chunks fill `maxViewBytes`.
   */
  limit?: number;
}

function idOf(value: unknown, what: string): string {
  if (!isWellFormedName(value, MAX_ID)) {
    throw new InspectError(
      "inspect/invalid-argument",
      `${what} must be a non-empty string of at most ${MAX_ID} characters with no lone surrogate.`,
    );
  }
  return value;
}

/** A time filter in epoch milliseconds, checked; undefined when it was not given. */
function timeOf(value: unknown, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new InspectError(
      "inspect/invalid-argument",
      `${what} must be a time in epoch milliseconds; got ${String(value)}.`,
    );
  }
  return value;
}

function statesOf(state: InspectListOptions["state"]): InspectStream["state"][] {
  const states = state === undefined ? [] : Array.isArray(state) ? state : [state];
  return states.map((one) => check.oneOf(one, "state", STATES, "streaming"));
}

/** A part's own refusal of a paging argument (a stale or forged cursor) is the inspector's. */
function reading<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (isDurableKitError(error) && error.code.endsWith("/invalid-argument")) {
      throw new InspectError("inspect/invalid-argument", error.message, { cause: error });
    }
    throw error;
  }
}

function streamOf(status: StreamStatus): InspectStream {
  return {
    streamId: status.streamId,
    state: status.state,
    cursor: status.cursor,
    encoding: status.encoding,
    contentType: status.contentType,
    tag: status.tag ?? null,
    error: status.error ?? null,
    createdAt: status.createdAt,
    updatedAt: status.updatedAt,
    closedAt: status.closedAt ?? null,
    expiresAt: status.expiresAt ?? null,
  };
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * Runs by state for the overview: each state counted up to {@link COUNT_LIMIT} from the tasks
 * part's state index (`countByState`), which reads no run.
 */
function runCounts(tasks: InspectedParts["tasks"] & object): InspectCounts<InspectRunState> {
  const counts = tasks.countByState({ max: COUNT_LIMIT });
  return {
    byState: { ...counts.byState },
    limit: COUNT_LIMIT,
    complete: counts.capped.length === 0,
    capped: [...counts.capped],
  };
}

/**
 * Reads what the object's durable parts hold, as versioned JSON ({@link INSPECT_SHAPE_VERSION}):
 * task runs with their steps on a time axis, streams with a page of their chunks, and chat turns
 * with what they stored. Read-only by
 * construction: it keeps only the read methods of each part and has no storage of its own, so
 * inspecting writes nothing. Each view costs what the part's own read costs (see DESIGN.md); none
 * scans a whole table.
 *
 * ```ts
 * readonly inspector = new Inspector(this.ctx, { parts: [this.tasks, this.streams, this.chat] });
 * ```
 */
export class Inspector {
  readonly #objectId: string;
  readonly #parts: InspectedParts;
  readonly #limits: { maxValueBytes: number; maxViewBytes: number };

  /**
   * @throws {InspectError} `inspect/invalid-argument` for a malformed `ctx`, option or part.
   */
  constructor(ctx: DurableObjectState, options: InspectOptions) {
    check.ctx(ctx, "new Inspector(ctx, { parts })");
    check.options(options, "Inspector options");
    this.#parts = inspectedParts(options?.parts);
    const maxValueBytes = check.count(
      options.maxValueBytes,
      "maxValueBytes",
      DEFAULT_MAX_VALUE_BYTES,
      {
        min: 256,
      },
    );
    const maxViewBytes = check.count(options.maxViewBytes, "maxViewBytes", DEFAULT_MAX_VIEW_BYTES, {
      min: maxValueBytes,
    });
    this.#limits = { maxValueBytes, maxViewBytes };
    this.#objectId = ctx.id.toString();
  }

  /** A fresh byte budget for one view. */
  #budget(): ValueBudget {
    return new ValueBudget(this.#limits);
  }

  /** The kinds of part this inspector reads. */
  get parts(): InspectPartKind[] {
    const kinds: InspectPartKind[] = [];
    if (this.#parts.tasks !== null) kinds.push("tasks");
    if (this.#parts.programs !== null) kinds.push("programs");
    if (this.#parts.streams !== null) kinds.push("streams");
    if (this.#parts.chat !== null) kinds.push("chat");
    if (this.#parts.subscriptions !== null) kinds.push("subscriptions");
    return kinds;
  }

  /**
   * What the inspector reads, with runs counted in each state up to 1,000 (from the tasks part's
   * index of runs by state: no run is read) and streams counted by state among the newest 1,000.
   */
  overview(): InspectOverview {
    const overview: InspectOverview = {
      version: INSPECT_SHAPE_VERSION,
      objectId: this.#objectId,
      parts: this.parts,
    };
    const tasks = this.#parts.tasks;
    if (tasks !== null) {
      overview.runs = runCounts(tasks);
      if (tasks.schedules !== undefined) {
        overview.schedules = tasks.schedules().slice(0, SCHEDULES_SHOWN);
      }
    }
    const subscriptions = this.#parts.subscriptions;
    if (subscriptions !== null) {
      overview.subscriptions = subscriptions.list({ limit: SUBSCRIPTIONS_SHOWN }).items;
    }
    const streams = this.#parts.streams;
    if (streams !== null) {
      const page = streams.list({ limit: COUNT_LIMIT });
      const counts: InspectCounts<InspectStream["state"]> = {
        byState: { streaming: 0, completed: 0, errored: 0 },
        limit: COUNT_LIMIT,
        complete: page.next === null,
        capped: [],
      };
      for (const status of page.items) counts.byState[status.state] += 1;
      if (!counts.complete) counts.capped = [...STATES];
      overview.streams = counts;
    }
    return overview;
  }

  /**
   * One page of the object's task runs, newest first, by `state`, `definition` and creation time
   * (`createdAfter`, `createdBefore`).
   * @throws {InspectError} `inspect/not-found` without a `Tasks` part; `inspect/invalid-argument`
   *   for a malformed filter, `limit` or `cursor`.
   */
  runs(options: InspectRunListOptions = {}): InspectPage<InspectRun> {
    const tasks = this.#tasksPart();
    check.options(options, "runs() options");
    const limit = check.count(options.limit, "limit", 50, { max: 1000 });
    const states = options.state === undefined ? [] : [options.state].flat();
    // The tasks part checks each state against its own list (`tasks/invalid-argument`, read as ours).
    const state = states.map((one) => idOf(one, "state") as InspectRunState);
    const definition =
      options.definition === undefined ? undefined : idOf(options.definition, "definition");
    const cursor = options.cursor === undefined ? undefined : idOf(options.cursor, "cursor");
    const createdAfter = timeOf(options.createdAfter, "createdAfter");
    const createdBefore = timeOf(options.createdBefore, "createdBefore");
    const page = reading(() =>
      tasks.list({
        state: state.length > 0 ? state : undefined,
        definition,
        limit,
        cursor,
        // A list shows each run's facts: its values are neither read nor decoded.
        values: false,
        ...(createdAfter === undefined ? {} : { createdAfter }),
        ...(createdBefore === undefined ? {} : { createdBefore }),
      }),
    );
    return { version: INSPECT_SHAPE_VERSION, items: page.items.map(runOf), next: page.next };
  }

  /**
   * One run's view: its facts, input, result and every step on the run's time axis (attempts,
   * outcome, wake, error), read in one consistent read of the part; null when no such run is held.
   * A value larger than `maxValueBytes` is not read: the part answers its size and first
   * characters (`Tasks.history(runId, { maxValueBytes })`), so a view of a run of large values
   * reads about what it answers.
   * @throws {InspectError} `inspect/not-found` without a `Tasks` part; `inspect/invalid-argument`
   *   for a malformed run id.
   */
  run(runId: string): InspectRunView | null {
    const tasks = this.#tasksPart();
    const id = idOf(runId, "runId");
    // Values over maxValueBytes are left unread by SQL: their size and first characters are all
    // the view shows of them (a tasks version without the option answers them whole).
    const history = reading(() =>
      tasks.history(id, {
        maxValueBytes: this.#limits.maxValueBytes,
        maxTotalBytes: this.#limits.maxViewBytes,
      }),
    );
    if (history === null) return null;
    const journals = (tasks.journals?.(id) ?? []).map((journal) => ({
      name: journal.name,
      executionId: journal.executionId,
      calls: callsOf(this.#parts.programs, journal.executionId, journal.entries),
    }));
    const children = (reading(() => tasks.children?.(id)) ?? []).map((child) => ({
      runId: child.runId,
      step: child.step,
      index: child.index,
      definition: child.definition,
      state: child.state,
      settledAt: child.settledAt,
      target: child.target,
      here: child.target.id === this.#objectId,
    }));
    const restarts = reading(() => tasks.restarts?.(id)) ?? [];
    return runViewOf(history, journals, children, restarts, this.#budget());
  }

  /**
   * One page of the object's program executions (its `Executor`'s), newest first, by `state`.
   * @throws {InspectError} `inspect/not-found` without an `Executor` part (or one too old to list);
   *   `inspect/invalid-argument` for a malformed filter, `limit` or `cursor`.
   */
  executions(options: InspectExecutionListOptions = {}): InspectPage<InspectExecution> {
    const programs = this.#programsPart();
    check.options(options, "executions() options");
    const limit = check.count(options.limit, "limit", 50, { max: 1000 });
    const states = options.state === undefined ? [] : [options.state].flat();
    // The Executor checks each state against its own list (read as `inspect/invalid-argument`).
    const state = states.map((one) => idOf(one, "state") as InspectExecution["state"]);
    const cursor = options.cursor === undefined ? undefined : idOf(options.cursor, "cursor");
    const page = reading(() => executionsOf(programs, { state, limit, cursor }, this.#budget()));
    return { version: INSPECT_SHAPE_VERSION, items: page.items, next: page.next };
  }

  /**
   * A program execution of the object's `Executor` (rpc-bridge): its record and the calls of its
   * own journal, decoded (module, method, key, outcome, coded error, sizes, the objects returned);
   * null when no such execution is held. A program run inside a task journals in the task's step
   * journal: its calls are in that run's view.
   * @throws {InspectError} `inspect/not-found` without an `Executor` part;
   *   `inspect/invalid-argument` for a malformed execution id.
   */
  execution(executionId: string): InspectExecutionView | null {
    const programs = this.#programsPart();
    const id = idOf(executionId, "executionId");
    return reading(() => executionViewOf(programs, id, this.#budget()));
  }

  /**
   * One page of the object's streams, newest first, by `state` and `tag`.
   * @throws {InspectError} `inspect/not-found` without a `Streams` part; `inspect/invalid-argument`
   *   for a malformed filter, `limit` or `cursor`.
   */
  streams(options: InspectListOptions = {}): InspectPage<InspectStream> {
    const streams = this.#streamsPart();
    check.options(options, "streams() options");
    const limit = check.count(options.limit, "limit", 50, { max: 1000 });
    const state = statesOf(options.state);
    const tag = options.tag === undefined ? undefined : idOf(options.tag, "tag");
    const cursor = options.cursor === undefined ? undefined : idOf(options.cursor, "cursor");
    const page = reading(() => streams.list({ state, tag, limit, cursor }));
    return { version: INSPECT_SHAPE_VERSION, items: page.items.map(streamOf), next: page.next };
  }

  /**
   * A stream's status and one page of its chunks from `from`, or null when it does not exist. The
   * page ends at `limit` chunks or when its chunks fill `maxViewBytes`; a chunk larger than
   * `maxValueBytes` is a truncated record naming the path of the whole chunk.
   * @throws {InspectError} `inspect/not-found` without a `Streams` part; `inspect/invalid-argument`
   *   for a malformed id, `from` or `limit`.
   */
  stream(streamId: string, options: InspectChunkOptions = {}): InspectStreamView | null {
    const streams = this.#streamsPart();
    const id = idOf(streamId, "streamId");
    check.options(options, "stream() options");
    const from = check.count(options.from, "from", 0, { min: 0 });
    const limit = check.count(options.limit, "limit", 100, { max: 1000 });
    const status = streams.status(id);
    if (status === null) return null;
    const budget = this.#budget();
    const base = `/streams/${encodeURIComponent(id)}/chunks`;
    const chunks: InspectChunk[] = [];
    let next = from;
    let upToDate = false;
    // Read a few chunks at a time while the page has bytes to spare, so a stream of large chunks
    // is read about as far as the page shows, not `limit` chunks deep.
    while (chunks.length < limit) {
      const batch = Math.min(CHUNK_BATCH, limit - chunks.length);
      const page = reading(() => streams.readPage(id, { from: next, limit: batch }));
      upToDate = page.upToDate;
      let full = false;
      for (const { seq, chunk } of page.chunks) {
        const value = chunk instanceof Uint8Array ? base64(chunk) : chunk;
        // A page always shows its first chunk (truncated if it must), so paging moves on.
        const path = `${base}/${seq}`;
        const taken =
          chunks.length === 0 ? { shown: budget.take(value, path) } : budget.next(value, path);
        if (taken === null) {
          full = true;
          break;
        }
        chunks.push({ seq, value: taken.shown });
        next = seq + 1;
      }
      if (full) {
        upToDate = false;
        break;
      }
      if (page.upToDate || page.chunks.length < batch) break;
    }
    return {
      version: INSPECT_SHAPE_VERSION,
      stream: streamOf(status),
      chunks,
      next,
      upToDate,
    };
  }

  /**
   * One page of a chat's turns, newest first, by `state`.
   * @throws {InspectError} `inspect/not-found` without a `ChatTurns` part; `inspect/invalid-argument`
   *   for a malformed chat id, filter, `limit` or `cursor`.
   */
  chatTurns(chatId: string, options: InspectListOptions = {}): InspectPage<InspectChatTurn> {
    const chat = this.#chatPart();
    const id = idOf(chatId, "chatId");
    check.options(options, "chatTurns() options");
    const limit = check.count(options.limit, "limit", 50, { max: 1000 });
    const state = statesOf(options.state);
    const cursor = options.cursor === undefined ? undefined : idOf(options.cursor, "cursor");
    const page = reading(() => chat.listTurns(id, { state, limit, cursor }));
    return {
      version: INSPECT_SHAPE_VERSION,
      items: page.items.map((turn) => ({ ...turn })),
      next: page.next,
    };
  }

  /**
   * A chat turn and one page of the chunks it stored, from `from` (default 0), at most `limit`
   * (default 1,000) and `maxViewBytes` in all; or null when no turn of that id is held.
   * @throws {InspectError} `inspect/not-found` without a `ChatTurns` part; `inspect/invalid-argument`
   *   for a malformed turn id, `from` or `limit`.
   */
  chatTurn(turnId: string, options: InspectChunkOptions = {}): InspectChatTurnView | null {
    const chat = this.#chatPart();
    const id = idOf(turnId, "turnId");
    check.options(options, "chatTurn() options");
    const from = check.count(options.from, "from", 0, { min: 0 });
    const limit = check.count(options.limit, "limit", 1000, { max: 10_000 });
    const turn = reading(() => chat.getTurn(id));
    if (turn === null) return null;
    const stored = chat.storedChunks(id) ?? [];
    const budget = this.#budget();
    const base = `/turns/${encodeURIComponent(id)}/chunks`;
    const chunks: InspectChatTurnView["chunks"] = [];
    let index = from;
    for (; index < stored.length && chunks.length < limit; index++) {
      const path = `${base}/${index}`;
      const taken =
        chunks.length === 0
          ? { shown: budget.take(stored[index], path) }
          : budget.next(stored[index], path);
      if (taken === null) break;
      chunks.push(taken.shown as InspectChatTurnView["chunks"][number]);
    }
    return {
      version: INSPECT_SHAPE_VERSION,
      turn: { ...turn },
      chunks,
      storedCount: stored.length,
      from,
      next: index < stored.length ? index : null,
    };
  }

  /**
   * One whole value, by the API path an `InspectTruncated` record named: a run's `input` or
   * `result` (`/runs/<runId>/input`), a step's result (`/runs/<runId>/steps/<index>/result`), a
   * result a restart dropped (`/runs/<runId>/restarts/<restart>/steps/<index>/result`), an
   * execution's `result` or `interrupt` payload, a stream's chunk (`/streams/<id>/chunks/<seq>`)
   * or a chat turn's (`/turns/<turnId>/chunks/<index>`); null when it is not held. It answers the
   * value whole, however large: a part bounds what it stores, the inspector bounds what it shows.
   * @throws {InspectError} `inspect/invalid-argument` for a path no record names;
   *   `inspect/not-found` without the part it reads.
   */
  value(path: string): InspectValueView | null {
    if (typeof path !== "string") {
      throw new InspectError("inspect/invalid-argument", "value(path) takes an API path.");
    }
    let parts: string[];
    try {
      parts = path.split("/").slice(1).map(decodeURIComponent);
    } catch (error) {
      throw new InspectError("inspect/invalid-argument", `${path} is not a well-formed path.`, {
        cause: error,
      });
    }
    const found = this.#valueAt(path, parts);
    if (found === null) return null;
    const text = JSON.stringify(found.value);
    return {
      version: INSPECT_SHAPE_VERSION,
      path,
      bytes: text === undefined ? 0 : utf8ByteLength(text),
      value: found.value,
    };
  }

  #valueAt(path: string, parts: string[]): { value: unknown } | null {
    const [kind, rawId, what, rawIndex, tail] = parts;
    const index = rawIndex !== undefined && /^\d{1,9}$/.test(rawIndex) ? Number(rawIndex) : -1;
    if (kind === "runs" && rawId !== undefined) {
      const tasks = this.#tasksPart();
      const history = reading(() => tasks.history(idOf(rawId, "runId")));
      if (history === null) return null;
      if (parts.length === 3 && what === "input") return { value: history.input };
      if (parts.length === 3 && what === "result") {
        return history.run.state === "completed" ? { value: history.run.result } : null;
      }
      if (parts.length === 5 && what === "steps" && tail === "result" && index >= 0) {
        const step = history.steps[index];
        return step !== undefined && "result" in step ? { value: step.result } : null;
      }
      // A step a restart dropped: /runs/<runId>/restarts/<restart>/steps/<index>/result.
      const [, , , , steps, rawStep, result] = parts;
      const stepIndex = rawStep !== undefined && /^\d{1,9}$/.test(rawStep) ? Number(rawStep) : -1;
      if (parts.length === 7 && what === "restarts" && steps === "steps" && result === "result") {
        const restart = reading(() => tasks.restarts?.(idOf(rawId, "runId")))?.find(
          (record) => record.restart === index,
        );
        const step = restart?.steps[stepIndex];
        return step !== undefined && "result" in step ? { value: step.result } : null;
      }
    }
    if (kind === "executions" && rawId !== undefined && parts.length === 3) {
      const record = reading(() => this.#programsPart().get(idOf(rawId, "executionId")));
      if (record === null) return null;
      if (what === "result") return record.state === "completed" ? { value: record.result } : null;
      if (what === "interrupt")
        return record.interrupt ? { value: record.interrupt.payload } : null;
    }
    if (
      kind === "streams" &&
      rawId !== undefined &&
      parts.length === 4 &&
      what === "chunks" &&
      index >= 0
    ) {
      const streams = this.#streamsPart();
      const id = idOf(rawId, "streamId");
      if (streams.status(id) === null) return null;
      const chunk = reading(() => streams.readPage(id, { from: index, limit: 1 })).chunks[0];
      if (chunk === undefined || chunk.seq !== index) return null;
      return { value: chunk.chunk instanceof Uint8Array ? base64(chunk.chunk) : chunk.chunk };
    }
    if (
      kind === "turns" &&
      rawId !== undefined &&
      parts.length === 4 &&
      what === "chunks" &&
      index >= 0
    ) {
      const chat = this.#chatPart();
      const stored = chat.storedChunks(idOf(rawId, "turnId"));
      return stored?.[index] === undefined ? null : { value: stored[index] };
    }
    throw new InspectError(
      "inspect/invalid-argument",
      `${path} is not the path of a value: use the path a truncated record names.`,
    );
  }

  #programsPart(): NonNullable<InspectedParts["programs"]> {
    if (this.#parts.programs === null) {
      throw new InspectError("inspect/not-found", "This inspector was given no Executor part.");
    }
    return this.#parts.programs;
  }

  /**
   * What a live feed of the API view `path` can wait on instead of reading it on a timer: for a
   * run's view (`/runs/<id>`), the run's next event (`tasks.events`, when the `Tasks` part has
   * them); null for any other view.
   */
  changes(path: string): ((signal: AbortSignal) => Promise<void>) | null {
    const match = /^\/runs\/([^/?]+)$/.exec(path);
    const runChanged = this.#parts.tasks?.runChanged;
    if (match === null || runChanged === undefined) return null;
    let runId: string;
    try {
      runId = decodeURIComponent(match[1] as string);
    } catch {
      return null;
    }
    return (signal) => runChanged(runId, signal);
  }

  #tasksPart(): NonNullable<InspectedParts["tasks"]> {
    if (this.#parts.tasks === null) {
      throw new InspectError("inspect/not-found", "This inspector was given no Tasks part.");
    }
    return this.#parts.tasks;
  }

  #streamsPart(): NonNullable<InspectedParts["streams"]> {
    if (this.#parts.streams === null) {
      throw new InspectError("inspect/not-found", "This inspector was given no Streams part.");
    }
    return this.#parts.streams;
  }

  #chatPart(): NonNullable<InspectedParts["chat"]> {
    if (this.#parts.chat === null) {
      throw new InspectError("inspect/not-found", "This inspector was given no ChatTurns part.");
    }
    return this.#parts.chat;
  }
}
