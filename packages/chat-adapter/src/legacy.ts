import type { StreamImportChunk, StreamJson, Streams } from "@durablekit/streams";

/** Where and how the legacy turns are imported. */
export interface LegacyImportTarget {
  streamIdOf: (turnId: string) => string;
  tag: string;
  chatId: string;
  ttlMs: number;
  settledTtlMs: number;
}

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
          const chunks: StreamImportChunk[] = tables.has(CHUNKS)
            ? sql
                .exec<{ body: string; created_at: number }>(
                  `SELECT body, created_at FROM ${CHUNKS} WHERE stream_id = ? ORDER BY chunk_index`,
                  turnId,
                )
                .toArray()
                .map((chunk) => ({ chunk: segmentOf(chunk.body), at: Number(chunk.created_at) }))
            : [];
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
          const messageId =
            columns.has("message_id") && row.message_id != null ? String(row.message_id) : turnId;
          const metadata: Record<string, string | number> = {
            dkChat: 1,
            chatId: target.chatId,
            messageId,
            requestId: String(row.request_id ?? ""),
          };
          if (columns.has("is_continuation") && row.is_continuation === 1) {
            metadata.isContinuation = 1;
          }
          const done = streams.importStream(target.streamIdOf(turnId), {
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
