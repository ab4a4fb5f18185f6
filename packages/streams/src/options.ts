import { isWellFormedName } from "@durablekit/compose";
import { assertEncoding, normalizeContentType, stringifyJson } from "./codec";
import { StreamConfigConflictError, StreamsArgumentError } from "./errors";
import { assertProducer } from "./producer";
import type { StreamRow } from "./store";
import type { StreamEncoding, StreamOpenOptions } from "./types";

/** Longest stream id, tag and producer id, in characters. */
export const MAX_ID_LENGTH = 256;

/** The content type a stream gets when `open` names only an encoding. */
export const DEFAULT_CONTENT_TYPE: Record<StreamEncoding, string> = {
  json: "application/json",
  text: "text/plain; charset=utf-8",
  binary: "application/octet-stream",
};

/** Checks a stream id (a well-formed name: non-empty, at most 256 characters, no lone surrogate). */
export function assertStreamId(streamId: unknown): asserts streamId is string {
  if (!isWellFormedName(streamId, MAX_ID_LENGTH)) {
    throw new StreamsArgumentError(
      `A stream id must be a non-empty string of at most ${MAX_ID_LENGTH} characters without lone surrogates; got ${describe(streamId)}.`,
    );
  }
}

/** Checks a tag (a well-formed name, as a stream id). */
export function assertTag(tag: unknown, streamId?: string): asserts tag is string {
  if (!isWellFormedName(tag, MAX_ID_LENGTH)) {
    throw new StreamsArgumentError(
      `A tag must be a non-empty string of at most ${MAX_ID_LENGTH} characters without lone surrogates; got ${describe(tag)}.`,
      streamId,
    );
  }
}

/** Checks that an options argument is an object (or absent). */
export function readObject(value: unknown, label: string, streamId?: string): void {
  if (value === undefined) return;
  if (value === null || typeof value !== "object") {
    throw new StreamsArgumentError(`${label} must be an object; got ${describe(value)}.`, streamId);
  }
}

/** A positive integer option, or its default. */
export function checkPositiveInteger(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new StreamsArgumentError(`${name} must be a positive integer; got ${describe(value)}.`);
  }
  return value;
}

/** A count option of a read (`batchSize`, `limit`): a finite number, floored, at least 1. */
export function readCount(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new StreamsArgumentError(`${name} must be a number; got ${describe(value)}.`);
  }
  return Math.max(1, Math.floor(value));
}

/** A read's start seq from its `from` option. */
export function readFrom(from: unknown): number {
  if (from === undefined) return 0;
  if (typeof from !== "number" || !Number.isFinite(from)) {
    throw new StreamsArgumentError(`from must be a number; got ${describe(from)}.`);
  }
  return Math.max(0, Math.floor(from));
}

/** A value as an error message shows it (JSON where it has one). */
function describe(value: unknown): string {
  if (typeof value === "bigint" || typeof value === "symbol" || typeof value === "function") {
    return typeof value;
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value;
  }
}

/** The stored form of `open`'s configuration options. */
export interface OpenConfig {
  metadata: string | null;
  ttlMs: number | null;
  expiresAt: number | null;
}

/** Validates `open`'s options and returns their stored form. */
export function readOpenOptions(streamId: string, options: StreamOpenOptions): OpenConfig {
  if (options.tag !== undefined) assertTag(options.tag, streamId);
  if (
    options.contentType !== undefined &&
    (typeof options.contentType !== "string" || options.contentType.trim() === "")
  ) {
    throw new StreamsArgumentError("contentType must be a non-empty string.", streamId);
  }
  if (options.encoding !== undefined) assertEncoding(options.encoding);
  if (options.producer !== undefined) {
    readObject(options.producer, "producer", streamId);
    assertProducer(options.producer, streamId);
  }
  let ttlMs: number | null = null;
  if (options.ttlMs !== undefined) {
    if (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0) {
      throw new StreamsArgumentError(
        `ttlMs must be a positive integer; got ${options.ttlMs}.`,
        streamId,
      );
    }
    ttlMs = options.ttlMs;
  }
  let expiresAt: number | null = null;
  if (options.expiresAt !== undefined) {
    expiresAt = options.expiresAt instanceof Date ? options.expiresAt.getTime() : options.expiresAt;
    if (!Number.isFinite(expiresAt)) {
      throw new StreamsArgumentError("expiresAt must be a Date or epoch milliseconds.", streamId);
    }
  }
  let metadata: string | null = null;
  if (options.metadata !== undefined) {
    if (
      options.metadata === null ||
      typeof options.metadata !== "object" ||
      Array.isArray(options.metadata)
    ) {
      throw new StreamsArgumentError("metadata must be a JSON object.", streamId);
    }
    metadata = stringifyJson(options.metadata, "metadata", streamId);
  }
  return { metadata, ttlMs, expiresAt };
}

/** Refuses a reopen whose given configuration differs from the stream's. */
export function checkConfig(row: StreamRow, options: StreamOpenOptions, config: OpenConfig): void {
  const id = row.stream_id;
  if (options.tag !== undefined && options.tag !== (row.tag ?? undefined)) {
    throw new StreamConfigConflictError(id, "tag", row.tag, options.tag);
  }
  if (
    options.contentType !== undefined &&
    normalizeContentType(options.contentType) !== normalizeContentType(row.content_type)
  ) {
    throw new StreamConfigConflictError(id, "contentType", row.content_type, options.contentType);
  }
  if (options.encoding !== undefined && options.encoding !== row.encoding) {
    throw new StreamConfigConflictError(id, "encoding", row.encoding, options.encoding);
  }
  if (options.ttlMs !== undefined && config.ttlMs !== row.ttl_ms) {
    throw new StreamConfigConflictError(id, "ttlMs", row.ttl_ms, options.ttlMs);
  }
  if (options.expiresAt !== undefined && config.expiresAt !== row.expires_at) {
    throw new StreamConfigConflictError(id, "expiresAt", row.expires_at, config.expiresAt);
  }
}
