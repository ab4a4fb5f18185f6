import {
  type AlarmPart,
  createEmitter,
  createOptionChecks,
  isWellFormedName,
  requestWake,
} from "@durablekit/compose";
import { SseArgumentError } from "../errors";
import { handlePost } from "./append";
import { DEFAULT_MAX_WRITE_BYTES, DEFAULT_MAX_WRITE_MESSAGES } from "./body";
import { handlePut } from "./create";
import { ForkLedger } from "./forks";
import { GroupCommit } from "./group-commit";
import { LiveTails } from "./live-tail";
import { HubNotices } from "./notices";
import { handleGet, handleHead } from "./read";
import { baseHeaders, preflight, problem } from "./responses";
import { isDurableStreamsSource, sourceLog } from "./sources";
import { ProtocolStore } from "./store";
import type {
  DurableStreamsForkExport,
  DurableStreamsForkExportRequest,
  DurableStreamsHandlerOptions,
  DurableStreamsHub,
  DurableStreamsPeer,
  ProtocolContext,
  ReadContext,
  SseEvent,
  StreamView,
} from "./types";

/** Longest stream id (the `@durablekit/streams` limit). */
const MAX_ID_LENGTH = 256;

/** The door checks of `@durablekit/compose`, throwing `sse/invalid-argument`. */
const check = createOptionChecks((message) => new SseArgumentError(message));

function checkName(name: string, value: unknown): void {
  if (!isWellFormedName(value, MAX_ID_LENGTH)) {
    throw new SseArgumentError(
      `${name} must be a non-empty string of at most ${MAX_ID_LENGTH} characters without lone surrogates.`,
    );
  }
}

/**
 * The Durable Streams HTTP protocol over a `Streams` log: create (PUT, also closed, with initial
 * content, or as a fork), append (POST, JSON mode, idempotent producers, append-and-close), close,
 * delete, HEAD, and reads from an offset — catch-up, long-poll and SSE — with TTL and absolute
 * expiry, `Stream-Next-Offset` / `Stream-Up-To-Date` / `Stream-Cursor` / `Stream-Closed`, ETags and
 * CORS. A stream's URL is `<basePath>/<stream id>`; its offsets are derived from the log's seqs.
 *
 * Construct one per object, next to its `Streams`, and hand it the object's requests:
 *
 * ```ts
 * readonly protocol = new DurableStreamsHandler(this.ctx, { streams: this.streams });
 * fetch(request) { return this.protocol.fetch(request); }
 * ```
 *
 * It keeps fork bookkeeping in its own `dk_sse_*` tables. It is an {@link AlarmPart} (a failed fork
 * release is retried through the alarm): list it in the object's `Alarms` next to the `Streams`; it
 * asks for its earlier wakes itself (earlier-only) and never sets the alarm otherwise.
 */
export class DurableStreamsHandler implements AlarmPart {
  readonly #protocol: ProtocolContext;
  readonly #ledger: ForkLedger;
  /** The outbox to the subscription hub (the `hub` option), or null. */
  readonly #notices: HubNotices | null;
  readonly #hub: (() => DurableStreamsHub) | null;
  /** The read-only sources by prefix (the `sources` option), each with its own read context. */
  readonly #sources: ReadonlyMap<string, ReadContext>;

  /** @throws {SseArgumentError} `sse/invalid-argument` for a malformed `ctx` or option, or without `streams`. */
  constructor(ctx: DurableObjectState, options: DurableStreamsHandlerOptions) {
    check.ctx(ctx, "new DurableStreamsHandler(ctx, { streams })");
    if (options === null || typeof options !== "object") {
      throw new SseArgumentError(
        "new DurableStreamsHandler(ctx, { streams }) takes an options object with the object's Streams.",
      );
    }
    const streams = options.streams;
    if (
      streams === null ||
      typeof streams !== "object" ||
      typeof streams.status !== "function" ||
      typeof streams.write !== "function"
    ) {
      throw new SseArgumentError(
        "options.streams must be the object's Streams (new Streams(this.ctx)), constructed before the handler.",
      );
    }
    if (options.basePath !== undefined && typeof options.basePath !== "string") {
      throw new SseArgumentError(`basePath must be a string; got ${typeof options.basePath}.`);
    }
    const basePath = (options.basePath ?? "/v1/stream").replace(/\/+$/, "");
    if (!basePath.startsWith("/") && basePath !== "") {
      throw new SseArgumentError(`basePath must start with "/"; got "${options.basePath}".`);
    }
    check.callback(options.now, "now");
    check.callback(options.peer, "peer");
    check.callback(options.onEvent, "onEvent");
    check.callback(options.hub, "hub");
    const positiveMs = { min: 1 };
    const longPollTimeoutMs = check.ms(
      options.longPollTimeoutMs,
      "longPollTimeoutMs",
      20_000,
      positiveMs,
    );
    const sseConnectionMs = check.ms(
      options.sseConnectionMs,
      "sseConnectionMs",
      60_000,
      positiveMs,
    );
    const maxReadBytes = check.count(options.maxReadBytes, "maxReadBytes", 1_048_576);
    const maxForkBytes = check.count(options.maxForkBytes, "maxForkBytes", 64 * 1_048_576);
    const maxWriteBytes = check.count(
      options.maxWriteBytes,
      "maxWriteBytes",
      DEFAULT_MAX_WRITE_BYTES,
    );
    const maxWriteMessages = check.count(
      options.maxWriteMessages,
      "maxWriteMessages",
      DEFAULT_MAX_WRITE_MESSAGES,
    );
    const cursorIntervalMs = check.ms(
      options.cursorIntervalMs,
      "cursorIntervalMs",
      20_000,
      positiveMs,
    );
    const store = new ProtocolStore(ctx.storage);
    const now = options.now ?? Date.now;
    const emit = createEmitter<SseEvent>("@durablekit/sse", options.onEvent);
    const peerOf = options.peer ?? (() => this.#self);
    const ledger = new ForkLedger({
      streams,
      store,
      now,
      peer: peerOf,
      // A release due later than now may be earlier than any wake asked for: earlier-only. Not
      // awaited; a failed alarm write leaves the retry to nextWakeAt() and the next alarm.
      requestWake: (at) => {
        requestWake(ctx, at).catch(() => {});
      },
      emit,
    });
    this.#ledger = ledger;
    this.#hub = options.hub ?? null;
    this.#notices =
      options.hub === undefined
        ? null
        : new HubNotices({
            store,
            hub: options.hub,
            now,
            emit,
            requestWake: (at) => {
              requestWake(ctx, at).catch(() => {});
            },
          });
    const notices = this.#notices;
    this.#sources = sourceMounts(options.sources, {
      longPollTimeoutMs,
      sseConnectionMs,
      maxReadBytes,
      cursorIntervalMs,
      now,
    });
    this.#protocol = {
      streams,
      store,
      basePath,
      longPollTimeoutMs,
      sseConnectionMs,
      maxReadBytes,
      maxForkBytes,
      maxWriteBytes,
      maxWriteMessages,
      commits: new GroupCommit(ctx.storage),
      tails: new LiveTails(streams),
      cursorIntervalMs,
      now,
      emit,
      peer: peerOf,
      view: (streamId: string): Promise<StreamView> => ledger.view(streamId),
      streamIdOf: (path: string) => this.streamIdOf(path),
      changed: notices === null ? null : (streamId) => notices.mark(streamId),
    };
  }

  /** This handler as its own peer: every stream in one object. */
  get #self(): DurableStreamsPeer {
    return {
      exportFork: (sourceId, request) => this.exportFork(sourceId, request),
      releaseFork: (sourceId, ref) => this.releaseFork(sourceId, ref),
    };
  }

  /**
   * Answers one protocol request for the stream its URL names. Never throws for a client error:
   * those are 4xx answers with a short text body; an unexpected failure is a 500.
   */
  async fetch(request: Request): Promise<Response> {
    try {
      if (request.method === "OPTIONS") return preflight();
      const url = new URL(request.url);
      const head = request.method === "HEAD";
      const streamId = this.streamIdOf(url.pathname);
      if (streamId === null)
        return problem(404, `No stream lives at ${url.pathname}.`, undefined, head);
      if (streamId === "__ds" || streamId.startsWith("__ds/")) {
        if (this.#hub !== null) return await this.#hub().fetch(request);
        return problem(
          501,
          "The reserved __ds subscription APIs need a subscription hub (the handler's hub option).",
          undefined,
          head,
        );
      }
      if (streamId.length > MAX_ID_LENGTH) {
        return problem(400, `Stream ids are at most ${MAX_ID_LENGTH} characters.`, undefined, head);
      }
      const slash = streamId.indexOf("/");
      const source = slash > 0 ? this.#sources.get(streamId.slice(0, slash)) : undefined;
      if (source !== undefined) return await readSource(source, request, streamId.slice(slash + 1));
      switch (request.method) {
        case "PUT":
          return this.#noticed(await handlePut(this.#protocol, this.#ledger, request, streamId));
        case "POST":
          return this.#noticed(await handlePost(this.#protocol, request, streamId));
        case "GET":
          return await handleGet(this.#protocol, request, streamId);
        case "HEAD":
          return await handleHead(this.#protocol, streamId);
        case "DELETE":
          return this.#noticed(await this.#delete(streamId));
        default:
          return problem(405, `${request.method} is not a Durable Streams operation.`, {
            Allow: "GET, HEAD, PUT, POST, DELETE, OPTIONS",
          });
      }
    } catch (error) {
      this.#protocol.emit({
        type: "sse:request-failed",
        method: request.method,
        url: request.url,
        error,
      });
      return problem(
        500,
        `The stream operation failed: ${(error as Error)?.message ?? String(error)}`,
      );
    }
  }

  /** The stream id a path (or absolute URL) under `basePath` names, or null. */
  streamIdOf(path: string): string | null {
    let pathname = path;
    if (!path.startsWith("/")) {
      try {
        pathname = new URL(path).pathname;
      } catch {
        return null;
      }
    }
    const prefix = `${this.#protocol.basePath}/`;
    if (!pathname.startsWith(prefix) || pathname.length === prefix.length) return null;
    try {
      return decodeURIComponent(pathname.slice(prefix.length));
    } catch {
      return null;
    }
  }

  /**
   * Fork source side (called by the fork's handler, through {@link DurableStreamsPeer}): checks the
   * request, takes a named reference on the source, and returns the inherited data a page at a time.
   * @throws {SseArgumentError} `sse/invalid-argument` for a malformed source id, request or ref.
   */
  exportFork(
    sourceId: string,
    request: DurableStreamsForkExportRequest,
  ): Promise<DurableStreamsForkExport> {
    checkName("sourceId", sourceId);
    if (request === null || typeof request !== "object") {
      throw new SseArgumentError("exportFork takes a DurableStreamsForkExportRequest object.");
    }
    checkName("ref", request.ref);
    return this.#ledger.export(sourceId, request);
  }

  /**
   * Fork source side: gives a reference back. Idempotent. When it was the last reference on a
   * deleted stream, the stream is collected and its own source reference (if it is a fork) released.
   * @throws {SseArgumentError} `sse/invalid-argument` for a malformed source id or ref.
   */
  releaseFork(sourceId: string, ref: string): Promise<void> {
    checkName("sourceId", sourceId);
    checkName("ref", ref);
    return this.#ledger.release(sourceId, ref);
  }

  /** When the handler next needs the alarm (a fork release or a hub notice to retry), or null. */
  nextWakeAt(): number | null {
    const release = this.#protocol.store.earliestRelease();
    const notice = this.#notices?.nextWakeAt() ?? null;
    if (release === null) return notice;
    return notice === null ? release : Math.min(release, notice);
  }

  /**
   * Called through `Alarms` from the object's `alarm()`: forks that expired give their source
   * references back, and releases that failed before are retried.
   */
  async alarm(): Promise<void> {
    for (const fork of this.#protocol.store.forks()) this.#ledger.settle(fork.stream_id);
    await this.#ledger.flush();
    await this.#notices?.flush("due");
  }

  /**
   * With a hub, a change that succeeded tells it now (not awaited: the answer does not wait for the
   * hub; the notice row, written with the change, carries it through a crash or a failure).
   */
  #noticed(response: Response): Response {
    if (this.#notices !== null && response.ok) void this.#notices.flush("all");
    return response;
  }

  async #delete(streamId: string): Promise<Response> {
    const view = await this.#protocol.view(streamId);
    if (view.kind === "absent") return problem(404, `Stream "${streamId}" does not exist.`);
    if (view.kind === "gone") return problem(410, `Stream "${streamId}" was already deleted.`);
    this.#protocol.store.transaction(() => {
      this.#protocol.streams.delete(streamId, { force: true });
      this.#protocol.changed?.(streamId);
    });
    // Unreferenced: the stream is gone for good, and as a fork it gives its source reference back.
    // Referenced by forks: a soft delete — 410 Gone until the last fork lets go.
    if (this.#protocol.store.refCount(streamId) === 0) await this.#ledger.view(streamId);
    return new Response(null, { status: 204, headers: baseHeaders() });
  }
}

/** The read context of each source of the `sources` option, by prefix. */
function sourceMounts(
  sources: unknown,
  reads: Omit<ReadContext, "streams" | "tails" | "view">,
): ReadonlyMap<string, ReadContext> {
  const mounts = new Map<string, ReadContext>();
  if (sources === undefined) return mounts;
  if (sources === null || typeof sources !== "object") {
    throw new SseArgumentError(
      "sources must be an object of read-only logs by path prefix, e.g. { runs: this.tasks.events }.",
    );
  }
  for (const [prefix, source] of Object.entries(sources)) {
    if (prefix === "" || prefix.includes("/") || prefix === "__ds" || prefix.length > 64) {
      throw new SseArgumentError(
        `A source's prefix is one path segment of 1–64 characters other than __ds; got "${prefix}".`,
      );
    }
    if (!isDurableStreamsSource(source)) {
      throw new SseArgumentError(
        `sources.${prefix} must be a log with status, readPage and readBatches (such as tasks.events).`,
      );
    }
    const log = sourceLog(source);
    mounts.set(prefix, {
      ...reads,
      streams: log,
      tails: new LiveTails(log),
      view: async (streamId) => {
        let status: ReturnType<typeof log.status>;
        try {
          status = log.status(streamId);
        } catch {
          // An id the source refuses names nothing it holds.
          status = null;
        }
        return status === null ? { kind: "absent" } : { kind: "live", status };
      },
    });
  }
  return mounts;
}

/** A request for a read-only source's log: GET and HEAD read it, anything else is refused. */
function readSource(reads: ReadContext, request: Request, id: string): Promise<Response> {
  const head = request.method === "HEAD";
  if (id === "")
    return Promise.resolve(problem(404, "Name a log of this source.", undefined, head));
  if (request.method === "GET") return handleGet(reads, request, id);
  if (head) return handleHead(reads, id);
  return Promise.resolve(
    problem(405, "This log is read-only: GET or HEAD it.", { Allow: "GET, HEAD, OPTIONS" }),
  );
}
