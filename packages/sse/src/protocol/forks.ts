import type { StreamStatus, Streams } from "@durablekit/streams";
import { bytesOf, messageOf } from "./codec";
import { reportedExpiry } from "./config";
import { isJsonMode, mediaType } from "./headers";
import { parseOffset } from "./offsets";
import { outboxRetryDelay } from "./retry";
import type { ProtocolStore } from "./store";
import type {
  DurableStreamsForkExport,
  DurableStreamsForkExportRequest,
  DurableStreamsPeer,
  SseEvent,
  StreamView,
} from "./types";

/** Most bytes of inherited data one export page carries (well under the RPC message limit). */
const PAGE_BYTES = 4 * 1024 * 1024;
/** What the ledger needs from its handler. */
export interface LedgerParts {
  streams: Streams;
  store: ProtocolStore;
  now(): number;
  peer(streamId: string): DurableStreamsPeer;
  /** Asks for a wake of the object no later than `at` (earlier-only, `requestWake`). */
  requestWake(at: number): void;
  emit(event: SseEvent): void;
}

/**
 * Fork bookkeeping across objects. A fork copies what it inherits at creation (copy-on-fork), so
 * reads never leave the fork's object; what crosses objects is the reference a fork holds on its
 * source, which makes deleting a referenced source a soft delete (410 Gone, path blocked) and
 * lets the last release collect it — and, through its own reference, its source in turn.
 *
 * References are named (one row per fork), so taking and releasing one are idempotent and a
 * release can be retried from an outbox until it lands.
 */
export class ForkLedger {
  readonly #parts: LedgerParts;
  #flushing: Promise<void> | null = null;
  /** False once a flush found the outbox empty; true again when a release is scheduled. */
  #maybeDue = true;

  constructor(parts: LedgerParts) {
    this.#parts = parts;
  }

  /** Reconciles `streamId`'s own fork reference, delivers due releases, and says what is there. */
  async view(streamId: string): Promise<StreamView> {
    this.settle(streamId);
    await this.flush();
    const status = this.#parts.streams.status(streamId);
    if (status !== null) return { kind: "live", status };
    return this.#parts.store.refCount(streamId) > 0 ? { kind: "gone" } : { kind: "absent" };
  }

  /**
   * If `streamId` was a fork that no longer exists (deleted, expired, replaced) and nothing
   * references it any more, moves its reference on its source to the outbox.
   */
  settle(streamId: string): void {
    const { store, streams } = this.#parts;
    const fork = store.fork(streamId);
    if (fork === null) return;
    const status = streams.status(streamId);
    if (status !== null && status.createdAt === fork.created_at) return;
    if (store.refCount(streamId) > 0) return;
    const now = this.#parts.now();
    store.transaction(() => {
      store.deleteFork(streamId);
      store.scheduleRelease(fork.source_id, fork.ref, now);
    });
    this.#maybeDue = true;
  }

  /** Schedules the release of a reference this object holds (or was about to hold) at `dueAt`. */
  scheduleRelease(sourceId: string, ref: string, dueAt: number): void {
    this.#parts.store.scheduleRelease(sourceId, ref, dueAt);
    this.#maybeDue = true;
    if (dueAt > this.#parts.now()) this.#parts.requestWake(dueAt);
  }

  /** Delivers every due release; a failed one is retried later with backoff (through the alarm). */
  flush(): Promise<void> {
    if (!this.#maybeDue) return Promise.resolve();
    if (this.#flushing !== null) return this.#flushing;
    this.#flushing = this.#deliver().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async #deliver(): Promise<void> {
    const { store } = this.#parts;
    for (;;) {
      const due = store.dueReleases(this.#parts.now(), 16);
      if (due.length === 0) break;
      for (const row of due) {
        try {
          await this.#parts.peer(row.source_id).releaseFork(row.source_id, row.ref);
          store.dropRelease(row.source_id, row.ref);
          this.#parts.emit({ type: "sse:fork-released", sourceId: row.source_id, ref: row.ref });
        } catch (error) {
          const attempts = row.attempts + 1;
          const at = this.#parts.now() + outboxRetryDelay(attempts);
          store.scheduleRelease(row.source_id, row.ref, at, attempts);
          this.#parts.requestWake(at);
          this.#parts.emit({
            type: "sse:release-failed",
            sourceId: row.source_id,
            ref: row.ref,
            attempts,
            retryAt: at,
            error,
          });
        }
      }
    }
    this.#maybeDue = store.earliestRelease() !== null;
  }

  /** Source side: a fork gives its reference back. Collecting this stream may cascade upward. */
  async release(sourceId: string, ref: string): Promise<void> {
    this.#parts.store.deleteRef(sourceId, ref);
    this.settle(sourceId);
    await this.flush();
  }

  /** Source side: validates a fork request, takes the reference, and returns a page of inherited data. */
  async export(
    sourceId: string,
    request: DurableStreamsForkExportRequest,
  ): Promise<DurableStreamsForkExport> {
    const view = await this.view(sourceId);
    if (view.kind === "absent") {
      return { ok: false, status: 404, message: `Source stream "${sourceId}" does not exist.` };
    }
    if (view.kind === "gone") {
      return {
        ok: false,
        status: 409,
        message: `Source stream "${sourceId}" was deleted; it cannot be forked.`,
      };
    }
    const { status } = view;
    if (request.from !== undefined) {
      if (!this.#parts.store.hasRef(sourceId, request.ref)) {
        return {
          ok: false,
          status: 409,
          message: `The fork's reference on "${sourceId}" is gone; retry the fork.`,
        };
      }
      return this.#page(status, request.from, request.until ?? status.cursor, null);
    }
    if (
      request.contentType !== undefined &&
      request.contentType !== null &&
      mediaType(request.contentType) !== mediaType(status.contentType)
    ) {
      return {
        ok: false,
        status: 409,
        message: `A fork of "${sourceId}" must have its content type ${status.contentType}; omit Content-Type to inherit it.`,
      };
    }
    const anchor = this.#anchor(status, request.offset ?? null);
    if (typeof anchor === "string") return { ok: false, status: 400, message: anchor };
    const cut = this.#cut(status, anchor, request.subOffset ?? 0);
    if (typeof cut === "string") return { ok: false, status: 400, message: cut };
    this.#parts.store.addRef(sourceId, request.ref);
    return this.#page(status, 0, cut.whole, { anchor, partial: cut.partial });
  }

  #anchor(status: StreamStatus, offset: string | null): number | string {
    if (offset === null) return status.cursor;
    const parsed = parseOffset(offset);
    if (parsed.kind === "invalid") return `Stream-Fork-Offset: ${parsed.reason}`;
    if (parsed.kind === "now") return status.cursor;
    if (parsed.seq > status.cursor) {
      return `Stream-Fork-Offset "${offset}" is beyond the source's tail.`;
    }
    return parsed.seq;
  }

  /** Where the inherited data ends: whole chunks, plus a byte prefix of the next chunk. */
  #cut(
    status: StreamStatus,
    anchor: number,
    subOffset: number,
  ): { whole: number; partial: Uint8Array | null } | string {
    if (subOffset === 0) return { whole: anchor, partial: null };
    if (isJsonMode(status.contentType)) {
      if (anchor + subOffset > status.cursor) {
        return `Stream-Fork-Sub-Offset ${subOffset} goes past the source's last message.`;
      }
      return { whole: anchor + subOffset, partial: null };
    }
    const next = this.#parts.streams.readPage(status.streamId, { from: anchor, limit: 1 })
      .chunks[0];
    if (next === undefined) {
      return `Stream-Fork-Sub-Offset ${subOffset} names bytes past the source's tail.`;
    }
    const bytes = bytesOf(status.encoding, next.chunk);
    if (subOffset > bytes.byteLength) {
      return `Stream-Fork-Sub-Offset ${subOffset} goes past the next data boundary (${bytes.byteLength} bytes).`;
    }
    if (subOffset === bytes.byteLength) return { whole: anchor + 1, partial: null };
    return { whole: anchor, partial: bytes.slice(0, subOffset) };
  }

  #page(
    status: StreamStatus,
    from: number,
    until: number,
    first: { anchor: number; partial: Uint8Array | null } | null,
  ): DurableStreamsForkExport {
    const json = isJsonMode(status.contentType);
    const chunks: Array<string | Uint8Array> = [];
    let next = from;
    let bytes = 0;
    while (next < until && bytes < PAGE_BYTES) {
      const limit = Math.min(256, until - next);
      const page = this.#parts.streams.readPage(status.streamId, { from: next, limit });
      if (page.chunks.length === 0) break;
      for (const { chunk } of page.chunks) {
        const wire = json ? messageOf(status.encoding, chunk) : bytesOf(status.encoding, chunk);
        bytes += typeof wire === "string" ? wire.length : wire.byteLength;
        chunks.push(wire);
      }
      next = page.next;
    }
    const expiry = reportedExpiry(status);
    return {
      ok: true,
      contentType: status.contentType,
      ttlSeconds: expiry.ttl === null ? null : Number(expiry.ttl),
      expiresAt: expiry.expiresAt === null ? null : Date.parse(expiry.expiresAt),
      anchor: first?.anchor ?? until,
      wholeChunks: until,
      partial: first?.partial ?? null,
      chunks,
      next: next < until ? next : null,
    };
  }
}
