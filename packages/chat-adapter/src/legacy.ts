import { utf8ByteLength } from "@durablekit/compose";
import type { StreamImportChunk, StreamJson, Streams } from "@durablekit/streams";
import type { ChatEvent } from "./types";

/** Where and how the legacy turns are imported. */
export interface LegacyImportTarget {
  streamIdOf: (turnId: string) => string;
  tag: string;
  chatId: string;
  ttlMs: number;
  settledTtlMs: number;
  /** The largest stored segment (JSON, UTF-8 bytes): larger legacy rows are split to fit. */
  maxSegmentBytes: number;
  /** Reports chunks and turns set aside. */
  emit: (event: ChatEvent) => void;
}

/** Codes with which `importStream` refuses a turn's data (nothing of it written). */
const REFUSED_DATA = new Set<unknown>([
  "streams/too-large",
  "streams/unserializable",
  "streams/invalid-argument",
]);

const METADATA = "cf_ai_chat_stream_metadata";
const CHUNKS = "cf_ai_chat_stream_chunks";

/**
 * The chat stream tables of `@cloudflare/ai-chat` (`cf_ai_chat_stream_metadata`,
 * `cf_ai_chat_stream_chunks`), in either historical column set: the first without `message_id`
 * and `is_continuation`, the later with them. Read once, imported, dropped.
 */
export class LegacyChatTables {
  readonly #storage: DurableObjectStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
  }

  /**
   * Imports every legacy stream as a turn (keeping its id, chunks with their times, state and last
   * activity; an in-flight stream stays streaming) and drops both tables, all in one transaction:
   * a crash leaves either the legacy tables or the imported turns, never half of each.
   * @returns the number of turns imported, or null when there were no legacy tables.
   */
  importInto(streams: Streams, target: LegacyImportTarget): number | null {
    const sql = this.#storage.sql;
    const tables = new Set(
      sql
        .exec<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
          METADATA,
          CHUNKS,
        )
        .toArray()
        .map((row) => row.name),
    );
    if (tables.size === 0) return null;
    return this.#storage.transactionSync(() => {
      let imported = 0;
      if (tables.has(METADATA)) {
        const columns = new Set(
          sql
            .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${METADATA}')`)
            .toArray()
            .map((row) => row.name),
        );
        for (const row of sql.exec(`SELECT * FROM ${METADATA} ORDER BY created_at`).toArray()) {
          const turnId = String(row.id);
          const chunks: StreamImportChunk[] = [];
          if (tables.has(CHUNKS)) {
            const rows = sql
              .exec<{ body: string; created_at: number }>(
                `SELECT body, created_at FROM ${CHUNKS} WHERE stream_id = ? ORDER BY chunk_index`,
                turnId,
              )
              .toArray();
            for (const row of rows) {
              const at = Number(row.created_at);
              for (const segment of fitSegments(segmentOf(row.body), turnId, target)) {
                chunks.push({ chunk: segment, at });
              }
            }
          }
          const status = String(row.status);
          const state =
            status === "error" ? "errored" : status === "completed" ? "completed" : "streaming";
          const createdAt = Number(row.created_at);
          const lastAt = chunks.reduce((max, chunk) => Math.max(max, chunk.at), createdAt);
          // Times may tie or, in old rows, run backwards; the import needs them non-decreasing.
          let floor = createdAt;
          for (const chunk of chunks) {
            floor = Math.max(floor, chunk.at);
            chunk.at = floor;
          }
          // The id the replayed start chunk carries is the one the client knows the message by.
          const messageId =
            startMessageId(chunks) ??
            (columns.has("message_id") && row.message_id != null ? String(row.message_id) : turnId);
          const metadata: Record<string, string | number> = {
            dkChat: 1,
            chatId: target.chatId,
            messageId,
            requestId: String(row.request_id ?? ""),
          };
          if (columns.has("is_continuation") && row.is_continuation === 1) {
            metadata.isContinuation = 1;
          }
          let done = false;
          try {
            done = streams.importStream(target.streamIdOf(turnId), {
              state,
              ...(state === "errored" ? { error: "The turn failed." } : {}),
              tag: target.tag,
              metadata,
              ttlMs: target.ttlMs,
              settledTtlMs: target.settledTtlMs,
              createdAt,
              updatedAt: row.completed_at != null ? Number(row.completed_at) : lastAt,
              chunks,
            });
          } catch (error) {
            // importStream checks every chunk before it writes anything, so a turn it refuses for
            // its data leaves nothing behind: old data never stops the object from starting. Any
            // other failure (storage) still aborts the whole import, and the tables stay for the
            // next construction.
            if (!REFUSED_DATA.has((error as { code?: unknown } | null)?.code)) throw error;
            target.emit({ type: "chat:legacy-turn-skipped", turnId, error });
          }
          if (done) imported += 1;
        }
      }
      sql.exec(`DROP TABLE IF EXISTS ${CHUNKS}`);
      sql.exec(`DROP TABLE IF EXISTS ${METADATA}`);
      return imported;
    });
  }
}

/** A legacy chunk row as a stored segment: one wire chunk, or a packed array of them. */
function segmentOf(body: string): StreamJson[] {
  try {
    const parsed: unknown = JSON.parse(body);
    if (Array.isArray(parsed)) {
      return parsed.map(
        (item) => (typeof item === "string" ? JSON.parse(item) : item) as StreamJson,
      );
    }
    return [parsed as StreamJson];
  } catch {
    return [{ type: "error", errorText: "A stored chunk could not be read." }];
  }
}

/** The `messageId` of the stored `start` chunk a turn begins with, or null. */
function startMessageId(chunks: StreamImportChunk[]): string | null {
  const first = (chunks[0]?.chunk as StreamJson[] | undefined)?.[0];
  if (first === null || typeof first !== "object" || Array.isArray(first)) return null;
  return first.type === "start" && typeof first.messageId === "string" ? first.messageId : null;
}

/** UTF-8 length of a value's JSON. */
function jsonBytes(value: unknown): number {
  return utf8ByteLength(JSON.stringify(value));
}

/**
 * A legacy row's chunks as segments that fit `maxSegmentBytes`: the row as it was when it fits;
 * else its chunks packed in order into as few segments as fit, a text or reasoning delta too large
 * for any segment split into several deltas of the same part (same text once concatenated), and
 * any other chunk too large left out and reported.
 */
function fitSegments(
  items: StreamJson[],
  turnId: string,
  target: LegacyImportTarget,
): StreamJson[][] {
  const max = target.maxSegmentBytes;
  if (jsonBytes(items) <= max) return [items];
  const segments: StreamJson[][] = [];
  let current: StreamJson[] = [];
  let bytes = 2;
  const add = (item: StreamJson, size: number): void => {
    if (current.length > 0 && bytes + 1 + size > max) {
      segments.push(current);
      current = [];
      bytes = 2;
    }
    bytes += size + (current.length > 0 ? 1 : 0);
    current.push(item);
  };
  for (const item of items) {
    const size = jsonBytes(item);
    if (size + 2 <= max) {
      add(item, size);
      continue;
    }
    const pieces = splitDelta(item, max - 2);
    if (pieces === null) {
      const type =
        item !== null && typeof item === "object" && !Array.isArray(item) ? item.type : undefined;
      target.emit({
        type: "chat:legacy-chunk-skipped",
        turnId,
        chunkType: typeof type === "string" ? type : "unknown",
        bytes: size,
      });
      continue;
    }
    for (const piece of pieces) add(piece, jsonBytes(piece));
  }
  if (current.length > 0) segments.push(current);
  return segments;
}

/**
 * A `text-delta` or `reasoning-delta` chunk as several chunks of the same part whose deltas
 * concatenate to the original and whose JSON each takes at most `limit` bytes; null for any other
 * chunk, or when even one character does not fit.
 */
function splitDelta(item: StreamJson, limit: number): StreamJson[] | null {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return null;
  if (item.type !== "text-delta" && item.type !== "reasoning-delta") return null;
  const delta = item.delta;
  if (typeof delta !== "string") return null;
  const budget = limit - jsonBytes({ ...item, delta: "" });
  const pieces: StreamJson[] = [];
  let piece = "";
  let used = 0;
  // By code point, so a surrogate pair is never cut; each costs its escaped JSON form in UTF-8.
  for (const char of delta) {
    const cost = jsonBytes(char) - 2;
    if (cost > budget) return null;
    if (used + cost > budget) {
      pieces.push({ ...item, delta: piece });
      piece = "";
      used = 0;
    }
    piece += char;
    used += cost;
  }
  if (piece !== "" || pieces.length === 0) pieces.push({ ...item, delta: piece });
  return pieces;
}
