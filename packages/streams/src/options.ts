import { createOptionChecks, isWellFormedName } from "@durablekit/compose";
import { assertEncoding, normalizeContentType, stringifyJson } from "./codec";
import { StreamConfigConflictError, StreamsArgumentError } from "./errors";
import { assertProducer } from "./producer";
import type { StreamRow } from "./store";
import type { StreamEncoding, StreamOpenOptions } from "./types";

/** The door checks of `@durablekit/compose`, throwing `streams/invalid-argument`. */
export const check = createOptionChecks((message) => new StreamsArgumentError(message));

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
  settledTtlMs: number | null;
  expiresAt: number | null;
}

/** A time-to-live option (`ttlMs`, `settledTtlMs`): a positive integer, or null when absent. */
export function readTtl(name: string, value: unknown, streamId?: string): number | null {
  if (value === undefined) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new StreamsArgumentError(
      `${name} must be a positive integer; got ${describe(value)}.`,
      streamId,
    );
  }
  return value;
}

/** An absolute expiry option (`expiresAt`) as epoch milliseconds, or null when absent. */
export function readExpiresAt(value: unknown, streamId?: string): number | null {
  if (value === undefined) return null;
  const at = value instanceof Date ? value.getTime() : value;
  if (typeof at !== "number" || !Number.isFinite(at)) {
    throw new StreamsArgumentError("expiresAt must be a Date or epoch milliseconds.", streamId);
  }
  return at;
}

/** A time option (epoch milliseconds), or its default. */
export function readTime(
  name: string,
  value: unknown,
  fallback: number,
  streamId?: string,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new StreamsArgumentError(
      `${name} must be epoch milliseconds; got ${describe(value)}.`,
      streamId,
    );
  }
  return value;
}

/** A metadata option in its stored form (JSON text); null when absent. */
export function readMetadata(value: unknown, streamId: string): string | null {
  if (value === undefined) return null;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new StreamsArgumentError("metadata must be a JSON object.", streamId);
  }
  return stringifyJson(value, "metadata", streamId);
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
  const ttlMs = readTtl("ttlMs", options.ttlMs, streamId);
  const settledTtlMs = readTtl("settledTtlMs", options.settledTtlMs, streamId);
  const expiresAt = readExpiresAt(options.expiresAt, streamId);
  const metadata = readMetadata(options.metadata, streamId);
  return { metadata, ttlMs, settledTtlMs, expiresAt };
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
  if (options.settledTtlMs !== undefined && config.settledTtlMs !== row.settled_ttl_ms) {
    throw new StreamConfigConflictError(
      id,
      "settledTtlMs",
      row.settled_ttl_ms,
      options.settledTtlMs,
    );
  }
  if (options.expiresAt !== undefined && config.expiresAt !== row.expires_at) {
    throw new StreamConfigConflictError(id, "expiresAt", row.expires_at, config.expiresAt);
  }
}
