import type { StreamJson, StreamStatus } from "@durablekit/streams";
import { type ExpiryRequest, mediaType } from "./headers";

/** The content type a stream created without one gets. */
export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/** Where a fork branches from. */
export interface ForkRequest {
  /** `Stream-Forked-From`: the source's path. */
  path: string;
  /** The source's stream id. */
  sourceId: string;
  /** `Stream-Fork-Offset` as sent, or null (the source's tail). */
  offset: string | null;
  /** `Stream-Fork-Sub-Offset` (0 when absent). */
  subOffset: number;
}

/** What a PUT asks for: the configuration a later PUT must repeat to be idempotent. */
export interface CreateRequest {
  /** `Content-Type` as sent, or null. */
  contentType: string | null;
  expiry: ExpiryRequest;
  closed: boolean;
  fork: ForkRequest | null;
}

/** Metadata key under which the handler keeps a stream's creation request (format version 1). */
const KEY = "durableStreams";

/** The creation request as stream metadata; `forkSeq` is the resolved fork offset. */
export function configMetadata(
  request: CreateRequest,
  forkSeq: number | null,
): Record<string, StreamJson> {
  return {
    [KEY]: {
      v: 1,
      ttl: request.expiry.ttlSeconds,
      expiresAt: request.expiry.expiresAt,
      forkedFrom: request.fork?.sourceId ?? null,
      forkSeq,
      forkSubOffset: request.fork?.subOffset ?? 0,
    },
  };
}

interface StoredConfig {
  ttl: number | null;
  expiresAt: number | null;
  forkedFrom: string | null;
  forkSeq: number | null;
  forkSubOffset: number;
}

/** The stored creation request, or one reconstructed from the status of a stream a host created. */
function storedConfig(status: StreamStatus): StoredConfig {
  const raw = status.metadata?.[KEY];
  if (raw !== null && typeof raw === "object" && !Array.isArray(raw) && raw.v === 1) {
    return {
      ttl: typeof raw.ttl === "number" ? raw.ttl : null,
      expiresAt: typeof raw.expiresAt === "number" ? raw.expiresAt : null,
      forkedFrom: typeof raw.forkedFrom === "string" ? raw.forkedFrom : null,
      forkSeq: typeof raw.forkSeq === "number" ? raw.forkSeq : null,
      forkSubOffset: typeof raw.forkSubOffset === "number" ? raw.forkSubOffset : 0,
    };
  }
  return {
    ttl: status.ttlMs === undefined ? null : Math.floor(status.ttlMs / 1000),
    expiresAt: status.ttlMs === undefined ? (status.expiresAt ?? null) : null,
    forkedFrom: null,
    forkSeq: null,
    forkSubOffset: 0,
  };
}

/**
 * True when a PUT to an existing stream repeats its configuration (protocol §5.1): content type
 * (media type, any case; a fork without one inherits), TTL or expiry as requested, closure status,
 * and for a fork its source, offset (when given) and sub-offset.
 */
export function sameConfig(
  status: StreamStatus,
  request: CreateRequest,
  requestedForkSeq: number | null,
): boolean {
  const stored = storedConfig(status);
  const contentType =
    request.contentType ?? (request.fork !== null ? status.contentType : DEFAULT_CONTENT_TYPE);
  if (mediaType(contentType) !== mediaType(status.contentType)) return false;
  if (request.expiry.ttlSeconds !== stored.ttl) return false;
  if (request.expiry.expiresAt !== stored.expiresAt) return false;
  if (request.closed !== (status.state !== "streaming")) return false;
  if ((request.fork?.sourceId ?? null) !== stored.forkedFrom) return false;
  if (request.fork !== null) {
    if (requestedForkSeq !== null && requestedForkSeq !== stored.forkSeq) return false;
    if (request.fork.subOffset !== stored.forkSubOffset) return false;
  }
  return true;
}

/** The TTL (seconds) and absolute expiry (ms) to report for a stream, as the protocol's headers. */
export function reportedExpiry(status: StreamStatus): {
  ttl: string | null;
  expiresAt: string | null;
} {
  if (status.ttlMs !== undefined)
    return { ttl: String(Math.floor(status.ttlMs / 1000)), expiresAt: null };
  if (status.expiresAt !== undefined)
    return { ttl: null, expiresAt: new Date(status.expiresAt).toISOString() };
  return { ttl: null, expiresAt: null };
}
