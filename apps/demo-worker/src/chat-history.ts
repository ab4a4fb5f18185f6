import type { ChatUIMessageChunk } from "@durablekit/chat-adapter";
import { readUIMessageStream, type UIMessage } from "ai";

/** Most messages a chat's history keeps (the oldest beyond are not stored). */
export const MAX_HISTORY_MESSAGES = 1_000;

/**
 * The chat's history as an AI SDK app keeps it: the messages of each request (the client sends the
 * whole conversation) and the assistant message of each turn once it settled, by message id, in
 * the order they were first seen. `GET /chat/:chatId/messages` serves it as `useChat({ messages })`
 * loads it. The demo's own table, in the chat's object.
 */
export class ChatHistory {
  readonly #sql: SqlStorage;

  constructor(storage: DurableObjectStorage) {
    this.#sql = storage.sql;
    this.#sql.exec(
      `CREATE TABLE IF NOT EXISTS demo_chat_messages (
         position INTEGER PRIMARY KEY AUTOINCREMENT,
         id TEXT NOT NULL UNIQUE,
         message TEXT NOT NULL)`,
    );
  }

  /** Remembers a request's messages: new ids are appended in order, known ones are updated. */
  rememberRequest(messages: readonly UIMessage[]): void {
    for (const message of messages.slice(-MAX_HISTORY_MESSAGES)) this.#upsert(message);
  }

  /**
   * Remembers a settled turn's assistant message, assembled from its stored chunks the way the AI
   * SDK client assembles it. Idempotent by message id, so a replayed step stores it once.
   */
  async rememberTurn(chunks: readonly ChatUIMessageChunk[]): Promise<UIMessage | null> {
    const stream = new ReadableStream({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    let last: UIMessage | undefined;
    try {
      for await (const message of readUIMessageStream<UIMessage>({ stream: stream as never })) {
        last = message;
      }
    } catch {
      // A turn that ended with an error chunk: the message assembled so far is what it shows.
    }
    if (last === undefined) return null;
    this.#upsert(last);
    return last;
  }

  /** The history in order, or null for a chat that has none. */
  messages(): UIMessage[] | null {
    const rows = this.#sql
      .exec<{ message: string }>("SELECT message FROM demo_chat_messages ORDER BY position")
      .toArray();
    return rows.length === 0 ? null : rows.map((row) => JSON.parse(row.message) as UIMessage);
  }

  #upsert(message: UIMessage): void {
    this.#sql.exec(
      `INSERT INTO demo_chat_messages (id, message) VALUES (?, ?)
       ON CONFLICT (id) DO UPDATE SET message = excluded.message`,
      message.id,
      JSON.stringify(message),
    );
  }
}
