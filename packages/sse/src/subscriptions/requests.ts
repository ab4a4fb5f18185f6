import { isWellFormedName } from "@durablekit/compose";
import { readBoundedBody } from "../protocol/body";
import { isRefusal, type Refusal, refusal } from "./answers";
import { MAX_PATTERN_LENGTH, MAX_PATTERN_SEGMENTS, normalizePath, segmentsOf } from "./glob";
import type { SubscriptionConfig } from "./store";

/** Largest body of a control request. */
export const MAX_CONTROL_BODY_BYTES = 65_536;
/** Longest subscription id and stream path. */
export const MAX_NAME_LENGTH = 256;
/** Most streams one request may name. */
export const MAX_STREAMS_PER_REQUEST = 100;
/** Longest description. */
const MAX_DESCRIPTION_LENGTH = 1024;
/** Most acks one request may carry. */
const MAX_ACKS = 1000;
/** Longest worker name of a claim. */
const MAX_WORKER_LENGTH = 256;
/** The lease bounds and default of the protocol (ms). */
export const MIN_LEASE_TTL_MS = 1_000;
export const MAX_LEASE_TTL_MS = 600_000;
export const DEFAULT_LEASE_TTL_MS = 30_000;

/** A control route under `<basePath>/__ds/`. */
export type ControlRoute =
  | { kind: "jwks" }
  | { kind: "subscription"; id: string }
  | { kind: "streams"; id: string }
  | { kind: "stream"; id: string; path: string }
  | { kind: "callback" | "claim" | "ack" | "release"; id: string };

/** One ack: a stream and the offset acknowledged on it. */
export type AckInput = { stream: string; offset: string };

/** The body of a callback, ack or release. */
export interface WakeRequest {
  wake_id: unknown;
  generation: unknown;
  acks: AckInput[];
  done: boolean;
}

/** The route a path under `__ds/` names (the part after `__ds/`), or null. */
export function controlRoute(rest: string): ControlRoute | null {
  if (rest === "jwks.json") return { kind: "jwks" };
  const parts = rest.split("/");
  if (parts[0] !== "subscriptions" || parts.length < 2) return null;
  const id = parts[1] as string;
  if (!isWellFormedName(id, MAX_NAME_LENGTH)) return null;
  if (parts.length === 2) return { kind: "subscription", id };
  const action = parts[2];
  if (action === "streams") {
    if (parts.length === 3) return { kind: "streams", id };
    const path = normalizePath(parts.slice(3).join("/"));
    return path === "" ? null : { kind: "stream", id, path };
  }
  if (
    parts.length === 3 &&
    (action === "callback" || action === "claim" || action === "ack" || action === "release")
  ) {
    return { kind: action, id };
  }
  return null;
}

/** A request's JSON body (an empty body is `{}`), or why it is refused. */
export async function readJson(request: Request): Promise<Record<string, unknown> | Refusal> {
  const body = await readBoundedBody(request, MAX_CONTROL_BODY_BYTES);
  if (!body.ok) {
    return refusal("INVALID_REQUEST", `A control request body is at most ${body.limit} bytes.`);
  }
  if (body.bytes.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body.bytes),
    );
  } catch {
    return refusal("INVALID_REQUEST", "The body is not valid JSON.");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return refusal("INVALID_REQUEST", "The body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

/**
 * A stream path named in a request, normalized (no leading, trailing or doubled slash), or null
 * when it cannot name a stream: empty, over 256 characters, under `__ds`, or with a `.` or `..`
 * segment.
 */
export function streamPath(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const path = normalizePath(value);
  if (path === "" || !isWellFormedName(path, MAX_NAME_LENGTH)) return null;
  if (path === "__ds" || path.startsWith("__ds/")) return null;
  // A "." or ".." segment would name another stream once in a URL (which resolves them).
  if (path.split("/").some((segment) => segment === "." || segment === "..")) return null;
  return path;
}

/** A list of stream paths (1–100), or why it is refused. */
export function streamPaths(value: unknown, name: string): string[] | Refusal {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_STREAMS_PER_REQUEST) {
    return refusal(
      "INVALID_REQUEST",
      `${name} must be an array of 1–${MAX_STREAMS_PER_REQUEST} stream paths.`,
    );
  }
  const paths: string[] = [];
  for (const item of value) {
    const path = streamPath(item);
    if (path === null) {
      return refusal(
        "INVALID_REQUEST",
        `${name} holds something that is not a stream path (1–${MAX_NAME_LENGTH} characters, not under __ds).`,
      );
    }
    if (!paths.includes(path)) paths.push(path);
  }
  return paths;
}

/** A subscription's PUT body as its configuration, or why it is refused. */
export function createInput(body: Record<string, unknown>): SubscriptionConfig | Refusal {
  const type = body.type;
  if (type !== "webhook" && type !== "pull-wake") {
    return refusal("INVALID_REQUEST", 'type must be "webhook" or "pull-wake".');
  }
  let pattern: string | null = null;
  if (body.pattern !== undefined) {
    if (typeof body.pattern !== "string" || body.pattern.length > MAX_PATTERN_LENGTH) {
      return refusal(
        "INVALID_REQUEST",
        `pattern must be a string of at most ${MAX_PATTERN_LENGTH} characters.`,
      );
    }
    const segments = segmentsOf(body.pattern);
    if (segments.length > MAX_PATTERN_SEGMENTS) {
      return refusal("INVALID_REQUEST", `pattern has at most ${MAX_PATTERN_SEGMENTS} segments.`);
    }
    pattern = segments.length === 0 ? null : segments.join("/");
  }
  let streams: string[] = [];
  if (body.streams !== undefined && !(Array.isArray(body.streams) && body.streams.length === 0)) {
    const paths = streamPaths(body.streams, "streams");
    if (isRefusal(paths)) return paths;
    streams = paths.sort();
  }
  if (pattern === null && streams.length === 0) {
    return refusal("INVALID_REQUEST", "A subscription needs a pattern, streams, or both.");
  }
  const lease = body.lease_ttl_ms ?? DEFAULT_LEASE_TTL_MS;
  if (
    typeof lease !== "number" ||
    !Number.isInteger(lease) ||
    lease < MIN_LEASE_TTL_MS ||
    lease > MAX_LEASE_TTL_MS
  ) {
    return refusal(
      "INVALID_REQUEST",
      `lease_ttl_ms must be an integer from ${MIN_LEASE_TTL_MS} to ${MAX_LEASE_TTL_MS}.`,
    );
  }
  let description: string | null = null;
  if (body.description !== undefined) {
    if (typeof body.description !== "string" || body.description.length > MAX_DESCRIPTION_LENGTH) {
      return refusal(
        "INVALID_REQUEST",
        `description must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters.`,
      );
    }
    description = body.description;
  }
  let webhook: { url: string } | null = null;
  let wakeStream: string | null = null;
  if (type === "webhook") {
    const url = (body.webhook as { url?: unknown } | null | undefined)?.url;
    if (typeof url !== "string" || url.length === 0) {
      return refusal("INVALID_REQUEST", "A webhook subscription needs webhook.url.");
    }
    webhook = { url };
  } else {
    wakeStream = streamPath(body.wake_stream);
    if (wakeStream === null) {
      return refusal(
        "INVALID_REQUEST",
        "A pull-wake subscription needs wake_stream, a stream path.",
      );
    }
  }
  return {
    type,
    pattern,
    streams,
    webhook,
    wake_stream: wakeStream,
    lease_ttl_ms: lease,
    description,
  };
}

/** A callback, ack or release body, or why it is refused. */
export function wakeRequest(body: Record<string, unknown>): WakeRequest | Refusal {
  const acks: AckInput[] = [];
  if (body.acks !== undefined) {
    if (!Array.isArray(body.acks) || body.acks.length > MAX_ACKS) {
      return refusal("INVALID_REQUEST", `acks must be an array of at most ${MAX_ACKS} acks.`);
    }
    for (const ack of body.acks) {
      const item = ack as { stream?: unknown; path?: unknown; offset?: unknown } | null;
      const stream = streamPath(item?.stream ?? item?.path);
      if (stream === null || typeof item?.offset !== "string") {
        return refusal("INVALID_REQUEST", "Each ack is { stream, offset }.");
      }
      acks.push({ stream, offset: item.offset });
    }
  }
  if (body.done !== undefined && typeof body.done !== "boolean") {
    return refusal("INVALID_REQUEST", "done must be a boolean.");
  }
  return { wake_id: body.wake_id, generation: body.generation, acks, done: body.done === true };
}

/** The worker of a claim, or why it is refused. */
export function claimWorker(body: Record<string, unknown>): string | Refusal {
  const worker = body.worker;
  if (typeof worker !== "string" || !isWellFormedName(worker, MAX_WORKER_LENGTH)) {
    return refusal(
      "INVALID_REQUEST",
      `worker must be a non-empty string of at most ${MAX_WORKER_LENGTH} characters.`,
    );
  }
  return worker;
}

/** The bearer token of a request, or null. */
export function bearer(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null || !header.startsWith("Bearer ")) return null;
  const token = header.slice("Bearer ".length).trim();
  return token === "" ? null : token;
}
