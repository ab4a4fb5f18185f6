import type { StreamStatus, Streams } from "@durablekit/streams";
import type { GroupCommit } from "./group-commit";
import type { LiveTails } from "./live-tail";
import type { ProtocolLog } from "./log";
import type { DurableStreamsSource } from "./sources";
import type { ProtocolStore } from "./store";

/**
 * How one handler reaches the handler holding another stream — the source of a fork. A host that
 * keeps every stream in one object needs none (the handler is its own peer); a host with one object
 * per stream forwards both calls to that object's handler, typically over Workers RPC:
 *
 * ```ts
 * peer: (streamId) => env.STREAMS.getByName(streamId),
 * // …and in that class: exportFork(id, r) { return this.protocol.exportFork(id, r) }, releaseFork likewise
 * ```
 */
export interface DurableStreamsPeer {
  exportFork(
    sourceId: string,
    request: DurableStreamsForkExportRequest,
  ): Promise<DurableStreamsForkExport>;
  releaseFork(sourceId: string, ref: string): Promise<void>;
}

/** A fork asking its source for a reference and the data it inherits. */
export interface DurableStreamsForkExportRequest {
  /** Unique name of the reference the fork takes (and later releases). */
  ref: string;
  /** `Stream-Fork-Offset` as sent, or null for the source's tail. Only on the first call. */
  offset?: string | null;
  /** `Stream-Fork-Sub-Offset` (0 when absent). Only on the first call. */
  subOffset?: number;
  /** The fork's requested content type, checked before any reference is taken. Only on the first call. */
  contentType?: string | null;
  /** For every page after the first: the seq to continue from (the previous `next`). */
  from?: number;
  /** For every page after the first: the first page's `wholeChunks`. */
  until?: number;
}

/** The source's answer: the inherited data a page at a time, or an HTTP status to answer with. */
export type DurableStreamsForkExport =
  | {
      ok: true;
      /** The source's content type (first page only) and expiry settings to inherit. */
      contentType: string;
      ttlSeconds: number | null;
      expiresAt: number | null;
      /** The fork offset, resolved to a seq of the source. */
      anchor: number;
      /** Whole chunks inherited: seqs `[0, wholeChunks)`. */
      wholeChunks: number;
      /** A prefix of chunk `wholeChunks` (a byte sub-offset), inherited as one more chunk. */
      partial: Uint8Array | null;
      /** This page: messages (JSON mode) or byte chunks, from seq `from`. */
      chunks: Array<string | Uint8Array>;
      /** Seq of the next page, or null when this was the last. */
      next: number | null;
    }
  | { ok: false; status: number; message: string };

/**
 * Events a {@link DurableStreamsHandler} emits to its `onEvent` listener (synchronously; a listener
 * that throws is reported with `console.warn` and the event dropped).
 *
 * - `sse:request-failed`: a request met an unexpected failure and was answered 500.
 * - `sse:fork-released`: this object gave a fork's reference back to its source.
 * - `sse:release-failed`: giving a reference back failed; it is retried at `retryAt` through the alarm.
 * - `sse:notice-failed`: telling the subscription hub that a stream changed failed; it is retried at
 *   `retryAt` through the alarm.
 * - `sse:subscription-delivered`: the hub delivered a wake (a webhook answered 2xx, or the wake
 *   stream took its event).
 * - `sse:subscription-delivery-failed`: a delivery failed; it is retried at `retryAt`.
 * - `sse:subscription-dead`: a subscription was dead-lettered (`reason` says why): it opens no wake
 *   until a confirming PUT revives it.
 */
export type SseEvent =
  | { type: "sse:request-failed"; method: string; url: string; error: unknown }
  | { type: "sse:fork-released"; sourceId: string; ref: string }
  | {
      type: "sse:release-failed";
      sourceId: string;
      ref: string;
      /** Failed attempts so far, 1 for the first. */
      attempts: number;
      retryAt: number;
      error: unknown;
    }
  | {
      type: "sse:notice-failed";
      streamId: string;
      attempts: number;
      retryAt: number;
      error: unknown;
    }
  | {
      type: "sse:subscription-delivered";
      subscriptionId: string;
      wakeId: string;
      generation: number;
      /** Attempts this delivery took, 1 for the first. */
      attempts: number;
    }
  | {
      type: "sse:subscription-delivery-failed";
      subscriptionId: string;
      wakeId: string;
      attempts: number;
      retryAt: number;
      error: string;
    }
  | { type: "sse:subscription-dead"; subscriptionId: string; reason: string };

/** Options of {@link DurableStreamsHandler}. */
export interface DurableStreamsHandlerOptions {
  /** The object's `Streams` (`new Streams(this.ctx)`): the logs the protocol serves. */
  streams: Streams;
  /** URL path the streams are mounted under: a stream's URL is `<basePath>/<stream id>`. Default `/v1/stream`. */
  basePath?: string;
  /** How long a long-poll waits for data before answering 204, in ms. Default 20000. */
  longPollTimeoutMs?: number;
  /** How long one SSE connection stays open before the server closes it (the client reconnects), in ms. Default 60000. */
  sseConnectionMs?: number;
  /** Most bytes one catch-up response returns (at least one chunk). Default 1 MiB. */
  maxReadBytes?: number;
  /** Most bytes a fork may copy from its source. Default 64 MiB. */
  maxForkBytes?: number;
  /**
   * Most bytes one PUT or POST body may carry; a longer body is answered 413 (a `Content-Length`
   * over it before a byte is read, a chunked body as soon as the count passes it). Default 8 MiB.
   */
  maxWriteBytes?: number;
  /**
   * Most messages one JSON-mode PUT or POST may append (a JSON array is flattened one level); more
   * is answered 413 and nothing is stored. Every message is a row written in the request's one
   * transaction, so with `maxWriteBytes` this bounds the work — and how long the stream's other
   * requests wait — per write. Default 10000.
   */
  maxWriteMessages?: number;
  /** Length of a `Stream-Cursor` interval, in ms. Default 20000. */
  cursorIntervalMs?: number;
  /** The handler holding another stream (fork sources). Default: this handler. */
  peer?: (streamId: string) => DurableStreamsPeer;
  /** Clock (epoch ms). Default `Date.now`. */
  now?: () => number;
  /** Receives {@link SseEvent}s; a throwing listener is reported with `console.warn` and ignored. */
  onEvent?: (event: SseEvent) => void;
  /**
   * Read-only logs served beside the object's streams, by path prefix: `{ runs: this.tasks.events }`
   * serves the events of run `<id>` at `<basePath>/runs/<id>` — catch-up, long-poll and SSE reads
   * and `HEAD`, as a JSON stream that is closed once the log settles (a settled run). Any other
   * method there is answered 405; the prefix is the source's (a stream of `streams` whose id starts
   * with `runs/` is not reachable through this handler). A prefix is one path segment.
   */
  sources?: Readonly<Record<string, DurableStreamsSource>>;
  /**
   * The subscription hub of these streams (the object holding {@link DurableStreamsSubscriptions}).
   * With it, every change of a stream's tail (create, append, delete) writes a notice in the
   * change's own transaction and tells the hub once the change is durable — retried through the
   * alarm until the hub has read the stream — and the reserved `<basePath>/__ds/*` requests this
   * handler receives are answered by the hub. Without it, those requests are answered 501.
   */
  hub?: () => DurableStreamsHub;
}

/**
 * How a stream's handler reaches its subscription hub (a Durable Object stub whose class forwards
 * `streamChanged` and `fetch` to its {@link DurableStreamsSubscriptions}).
 */
export interface DurableStreamsHub {
  /**
   * A stream of the caller changed. The hub reads the stream's tail from the stream itself (a HEAD
   * through its `peer`), so a caller can only make it look, never tell it what is there.
   */
  streamChanged(streamId: string): Promise<void>;
  /** Answers a reserved `<basePath>/__ds/*` request. */
  fetch(request: Request): Promise<Response>;
}

/** What a request finds at a stream id after reconciliation. */
export type StreamView =
  | { kind: "live"; status: StreamStatus }
  /** Deleted or expired while forks still reference it: 410 Gone, its path blocked. */
  | { kind: "gone" }
  | { kind: "absent" };

/** The resolved options and shared parts every request module works with. */
/** What the protocol's reads (GET, HEAD) need of the handler: over `Streams`, or over a source. */
export interface ReadContext {
  readonly streams: ProtocolLog;
  readonly tails: LiveTails;
  readonly longPollTimeoutMs: number;
  readonly sseConnectionMs: number;
  readonly maxReadBytes: number;
  readonly cursorIntervalMs: number;
  now(): number;
  /** Reconciles fork bookkeeping for `streamId`, then says what is there. */
  view(streamId: string): Promise<StreamView>;
}

export interface ProtocolContext {
  readonly streams: Streams;
  readonly store: ProtocolStore;
  readonly basePath: string;
  readonly longPollTimeoutMs: number;
  readonly sseConnectionMs: number;
  readonly maxReadBytes: number;
  readonly maxForkBytes: number;
  readonly maxWriteBytes: number;
  readonly maxWriteMessages: number;
  /** Appends of this handler: writes arriving while a commit is in flight share the next one. */
  readonly commits: GroupCommit;
  /** The live SSE readers of this handler: shared waits and coalesced reads after a wake. */
  readonly tails: LiveTails;
  readonly cursorIntervalMs: number;
  now(): number;
  emit(event: SseEvent): void;
  peer(streamId: string): DurableStreamsPeer;
  /** Reconciles fork bookkeeping for `streamId`, then says what is there. */
  view(streamId: string): Promise<StreamView>;
  /** The stream id a protocol path (or absolute URL) names, or null when it is not under `basePath`. */
  streamIdOf(path: string): string | null;
  /**
   * Marks a stream's tail as changed for its subscription hub; called inside the change's
   * transaction. Null without a hub.
   */
  readonly changed: ((streamId: string) => void) | null;
}
