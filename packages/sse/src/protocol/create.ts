import type { StreamOpenOptions, StreamValue } from "@durablekit/streams";
import { readWriteBody, tooManyMessages } from "./body";
import { PROTOCOL_ENCODING, storedMessage, strictUtf8 } from "./codec";
import {
  type CreateRequest,
  configMetadata,
  DEFAULT_CONTENT_TYPE,
  type ForkRequest,
  sameConfig,
} from "./config";
import { writeErrorResponse } from "./errors-map";
import type { ForkLedger } from "./forks";
import { canonicalInteger, closedFlag, H, isJsonMode, parseExpiry } from "./headers";
import { parseJsonBody } from "./json-mode";
import { formatOffset, parseOffset } from "./offsets";
import { baseHeaders, problem } from "./responses";
import type { DurableStreamsForkExport, ProtocolContext } from "./types";

/** A fork's pending reference is released this long after it was requested unless the fork was created. */
const PENDING_FORK_MS = 60_000;

/** A PUT's request, or the 400 to answer. */
function readCreate(ctx: ProtocolContext, request: Request): CreateRequest | Response {
  const headers = request.headers;
  const expiry = parseExpiry(headers);
  if (!expiry.ok) return problem(400, expiry.reason);
  const forkedFrom = headers.get(H.forkedFrom);
  const offset = headers.get(H.forkOffset);
  const subText = headers.get(H.forkSubOffset);
  const contentType = headers.get("content-type")?.trim() || null;
  const base = { contentType, expiry: expiry.value, closed: closedFlag(headers) };
  if (forkedFrom === null) {
    if (offset !== null || subText !== null) {
      return problem(400, "Stream-Fork-Offset and Stream-Fork-Sub-Offset need Stream-Forked-From.");
    }
    return { ...base, fork: null };
  }
  const subOffset = subText === null ? 0 : canonicalInteger(subText.trim());
  if (subOffset === null) {
    return problem(400, `Stream-Fork-Sub-Offset must be a non-negative integer; got "${subText}".`);
  }
  if (offset !== null && parseOffset(offset).kind === "invalid") {
    return problem(400, `Stream-Fork-Offset "${offset}" is not an offset of this server.`);
  }
  const sourceId = ctx.streamIdOf(forkedFrom.trim());
  if (sourceId === null)
    return problem(404, `Stream-Forked-From "${forkedFrom}" is not a stream of this server.`);
  const fork: ForkRequest = { path: forkedFrom.trim(), sourceId, offset, subOffset };
  return { ...base, fork };
}

/** The values a PUT body appends after any inherited data, or the 400 to answer. */
function initialValues(
  body: Uint8Array,
  json: boolean,
  maxMessages: number,
): StreamValue[] | Response {
  if (body.byteLength === 0) return [];
  if (!json) return [body];
  let text: string;
  try {
    text = strictUtf8.decode(body);
  } catch {
    return problem(400, "A JSON body must be UTF-8.");
  }
  const parsed = parseJsonBody(text, true);
  if (!parsed.ok) return problem(400, parsed.reason);
  const tooMany = tooManyMessages(parsed.messages, maxMessages);
  if (tooMany) return tooMany;
  return parsed.messages.map((message) => storedMessage(PROTOCOL_ENCODING, message));
}

/** The 200 or 201 of a PUT, with the stream's content type, tail offset and closure. */
function created(
  ctx: ProtocolContext,
  request: Request,
  streamId: string,
  isNew: boolean,
): Response {
  const status = ctx.streams.status(streamId);
  const headers = baseHeaders();
  if (status !== null) {
    headers.set("Content-Type", status.contentType);
    headers.set(H.nextOffset, formatOffset(status.cursor));
    if (status.state !== "streaming") headers.set(H.closed, "true");
  }
  if (isNew) {
    const url = new URL(request.url);
    headers.set("Location", `${url.origin}${url.pathname}`);
  }
  return new Response(null, { status: isNew ? 201 : 200, headers });
}

/** Answer to a PUT on a path that already holds something. */
function existing(
  ctx: ProtocolContext,
  request: Request,
  streamId: string,
  create: CreateRequest,
): Response {
  const status = ctx.streams.status(streamId);
  if (status === null)
    return problem(409, `Stream "${streamId}" was deleted and is still referenced by forks.`);
  let forkSeq: number | null = null;
  if (create.fork?.offset != null) {
    const parsed = parseOffset(create.fork.offset);
    forkSeq = parsed.kind === "seq" ? parsed.seq : null;
  }
  if (!sameConfig(status, create, forkSeq)) {
    return problem(409, `Stream "${streamId}" exists with a different configuration.`);
  }
  return created(ctx, request, streamId, false);
}

function openOptions(
  contentType: string,
  ttlSeconds: number | null,
  expiresAt: number | null,
  metadata: StreamOpenOptions["metadata"],
): StreamOpenOptions {
  return {
    contentType,
    encoding: PROTOCOL_ENCODING,
    ...(ttlSeconds === null ? {} : { ttlMs: Math.max(1, ttlSeconds * 1000) }),
    ...(expiresAt === null ? {} : { expiresAt }),
    ...(metadata === undefined ? {} : { metadata }),
  };
}

/**
 * PUT: creates a stream (optionally closed, optionally with initial content, optionally as a fork),
 * or confirms an existing one with the same configuration (protocol §5.1, §4.2).
 */
export async function handlePut(
  ctx: ProtocolContext,
  ledger: ForkLedger,
  request: Request,
  streamId: string,
): Promise<Response> {
  const create = readCreate(ctx, request);
  if (create instanceof Response) return create;
  const body = await readWriteBody(request, ctx.maxWriteBytes);
  if (body instanceof Response) return body;
  const view = await ctx.view(streamId);
  if (view.kind !== "absent") return existing(ctx, request, streamId, create);
  if (create.fork !== null)
    return createFork(ctx, ledger, request, streamId, create, create.fork, body);

  const contentType = create.contentType ?? DEFAULT_CONTENT_TYPE;
  const values = initialValues(body, isJsonMode(contentType), ctx.maxWriteMessages);
  if (values instanceof Response) return values;
  const { ttlSeconds, expiresAt } = create.expiry;
  try {
    ctx.store.transaction(() => {
      ctx.streams.open(
        streamId,
        openOptions(contentType, ttlSeconds, expiresAt, configMetadata(create, null)),
      );
      if (values.length > 0 || create.closed) {
        ctx.streams.write(streamId, values, create.closed ? { settle: true } : {});
      }
      ctx.changed?.(streamId);
    });
  } catch (error) {
    const answer = writeErrorResponse(error, ctx.streams, streamId);
    if (answer === null) throw error;
    return answer;
  }
  return created(ctx, request, streamId, true);
}

async function createFork(
  ctx: ProtocolContext,
  ledger: ForkLedger,
  request: Request,
  streamId: string,
  create: CreateRequest,
  fork: ForkRequest,
  body: Uint8Array,
): Promise<Response> {
  const ref = `${streamId}#${crypto.randomUUID()}`;
  // Written before the source is asked: if this object dies mid-fork, the alarm gives the
  // reference back. The fork's creation removes it in the same transaction.
  ledger.scheduleRelease(fork.sourceId, ref, ctx.now() + PENDING_FORK_MS);
  const releaseNow = async () => {
    ledger.scheduleRelease(fork.sourceId, ref, ctx.now());
    await ledger.flush();
  };
  const peer = ctx.peer(fork.sourceId);
  let first: DurableStreamsForkExport;
  const inherited: Array<string | Uint8Array> = [];
  try {
    first = await peer.exportFork(fork.sourceId, {
      ref,
      offset: fork.offset,
      subOffset: fork.subOffset,
      contentType: create.contentType,
    });
    if (!first.ok) {
      ctx.store.dropRelease(fork.sourceId, ref);
      return problem(first.status, first.message);
    }
    inherited.push(...first.chunks);
    let bytes = 0;
    let next = first.next;
    while (next !== null) {
      const page = await peer.exportFork(fork.sourceId, {
        ref,
        from: next,
        until: first.wholeChunks,
      });
      if (!page.ok || (page.next !== null && page.next <= next && page.chunks.length === 0)) {
        await releaseNow();
        return problem(
          409,
          page.ok ? "The source changed while it was being forked; retry." : page.message,
        );
      }
      for (const chunk of page.chunks) {
        bytes += typeof chunk === "string" ? chunk.length : chunk.byteLength;
        inherited.push(chunk);
      }
      if (bytes > ctx.maxForkBytes) {
        await releaseNow();
        return problem(
          413,
          `The fork would copy more than ${ctx.maxForkBytes} bytes from its source.`,
        );
      }
      next = page.next;
    }
  } catch {
    await releaseNow();
    return problem(
      503,
      `The source stream "${fork.sourceId}" could not be reached; retry the fork.`,
    );
  }

  // Another request may have created this path while the source was being read.
  const view = await ctx.view(streamId);
  if (view.kind !== "absent") {
    await releaseNow();
    return existing(ctx, request, streamId, create);
  }
  const contentType = create.contentType ?? first.contentType;
  const json = isJsonMode(contentType);
  const values = initialValues(body, json, ctx.maxWriteMessages);
  if (values instanceof Response) {
    await releaseNow();
    return values;
  }
  const { ttlSeconds: ttl, expiresAt: at } = create.expiry;
  const ttlSeconds = ttl ?? (at === null ? first.ttlSeconds : null);
  const expiresAt = at ?? (ttl === null ? first.expiresAt : null);
  try {
    ctx.store.transaction(() => {
      ctx.streams.open(
        streamId,
        openOptions(contentType, ttlSeconds, expiresAt, configMetadata(create, first.anchor)),
      );
      const copied = inherited.map((chunk) =>
        typeof chunk === "string" ? storedMessage(PROTOCOL_ENCODING, chunk) : chunk,
      );
      if (first.partial !== null) copied.push(first.partial);
      if (copied.length > 0) ctx.streams.write(streamId, copied);
      if (values.length > 0 || create.closed) {
        ctx.streams.write(streamId, values, create.closed ? { settle: true } : {});
      }
      const status = ctx.streams.status(streamId);
      ctx.store.setFork({
        stream_id: streamId,
        source_id: fork.sourceId,
        ref,
        created_at: status?.createdAt ?? ctx.now(),
      });
      ctx.store.dropRelease(fork.sourceId, ref);
      ctx.changed?.(streamId);
    });
  } catch (error) {
    await releaseNow();
    const answer = writeErrorResponse(error, ctx.streams, streamId);
    if (answer === null) throw error;
    return answer;
  }
  return created(ctx, request, streamId, true);
}
