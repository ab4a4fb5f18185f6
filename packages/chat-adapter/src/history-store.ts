import { migrateChatHistorySchema } from "./history-schema";

/** A row of `dk_chat_messages` as the history reads it. */
export interface HistoryRow {
  messageId: string;
  pos: number;
  seq: number;
  role: string;
  turnId: string | null;
  /** The message JSON; null while its turn is streaming. */
  message: string | null;
  endState: "finished" | "stopped" | "failed" | null;
  endText: string | null;
}

/** What a request adds to a chat's history, written by {@link HistoryStore.accept} in one transaction. */
export interface HistoryWrite {
  chatId: string;
  /** For a regenerate: the rows after the message at this position are deleted first. */
  truncateAfter: { pos: number; seq: number } | null;
  /** The request's messages the history does not hold yet, in order, with their JSON. */
  added: { messageId: string; role: string; json: string }[];
}

/**
 * The history's SQL over `dk_chat_messages` (schema in `history-schema.ts`). Every state change
 * is one `transactionSync`; reads are plain queries.
 */
export class HistoryStore {
  readonly #storage: DurableObjectStorage;
  readonly #sql: SqlStorage;

  constructor(storage: DurableObjectStorage) {
    migrateChatHistorySchema(storage);
    this.#storage = storage;
    this.#sql = storage.sql;
  }

  /** Runs `fn` as one SQLite transaction. */
  transaction<T>(fn: () => T): T {
    return this.#storage.transactionSync(fn);
  }

  /** Every row of the chat, in conversation order. */
  list(chatId: string): HistoryRow[] {
    return this.#sql
      .exec<{
        message_id: string;
        pos: number;
        seq: number;
        role: string;
        turn_id: string | null;
        message: string | null;
        end_state: HistoryRow["endState"];
        end_text: string | null;
      }>(
        `SELECT message_id, pos, seq, role, turn_id, message, end_state, end_text
           FROM dk_chat_messages WHERE chat_id = ? ORDER BY pos, seq`,
        chatId,
      )
      .toArray()
      .map((row) => ({
        messageId: row.message_id,
        pos: row.pos,
        seq: row.seq,
        role: row.role,
        turnId: row.turn_id,
        message: row.message,
        endState: row.end_state,
        endText: row.end_text,
      }));
  }

  /** The positions of the chat's messages by id (what a request is matched against). */
  positions(chatId: string): Map<string, { pos: number; seq: number }> {
    const rows = this.#sql
      .exec<{ message_id: string; pos: number; seq: number }>(
        "SELECT message_id, pos, seq FROM dk_chat_messages WHERE chat_id = ?",
        chatId,
      )
      .toArray();
    return new Map(rows.map((row) => [row.message_id, { pos: row.pos, seq: row.seq }]));
  }

  /**
   * Writes a request's new messages (after deleting what a regenerate replaces) and returns the
   * position of each message the request holds. Call inside {@link transaction}.
   */
  accept(write: HistoryWrite): void {
    const { chatId } = write;
    if (write.truncateAfter !== null) {
      const { pos, seq } = write.truncateAfter;
      this.#sql.exec(
        "DELETE FROM dk_chat_messages WHERE chat_id = ? AND (pos > ? OR (pos = ? AND seq > ?))",
        chatId,
        pos,
        pos,
        seq,
      );
    }
    let next = this.#maxPos(chatId);
    for (const message of write.added) {
      next += 1;
      this.#sql.exec(
        `INSERT INTO dk_chat_messages (chat_id, message_id, pos, seq, role, message)
         VALUES (?, ?, ?, ?, ?, ?)`,
        chatId,
        message.messageId,
        next,
        next,
        message.role,
        message.json,
      );
    }
  }

  /** The position of one message of the chat, or null. */
  positionOf(chatId: string, messageId: string): { pos: number; seq: number } | null {
    const row = this.#sql
      .exec<{ pos: number; seq: number }>(
        "SELECT pos, seq FROM dk_chat_messages WHERE chat_id = ? AND message_id = ?",
        chatId,
        messageId,
      )
      .toArray()[0];
    return row ?? null;
  }

  /**
   * Holds the place of a turn's assistant message right after the message at `after` (after any
   * answer already there). Call inside {@link transaction}.
   */
  reserve(chatId: string, messageId: string, turnId: string, after: { pos: number }): void {
    const last = this.#sql
      .exec<{ seq: number | null }>(
        "SELECT MAX(seq) AS seq FROM dk_chat_messages WHERE chat_id = ? AND pos = ?",
        chatId,
        after.pos,
      )
      .one().seq;
    this.#sql.exec(
      `INSERT INTO dk_chat_messages (chat_id, message_id, pos, seq, role, turn_id)
       VALUES (?, ?, ?, ?, 'assistant', ?)`,
      chatId,
      messageId,
      after.pos,
      (last ?? after.pos) + 1,
      turnId,
    );
  }

  /**
   * Stores a turn's assistant message and its end in its reserved row, once: a row that already
   * holds a message is left as it is. Returns whether it was stored now.
   */
  settle(
    chatId: string,
    messageId: string,
    json: string,
    end: { state: "finished" | "stopped" | "failed"; text: string | null },
  ): boolean {
    const cursor = this.#sql.exec(
      `UPDATE dk_chat_messages SET message = ?, end_state = ?, end_text = ?
        WHERE chat_id = ? AND message_id = ? AND message IS NULL`,
      json,
      end.state,
      end.text,
      chatId,
      messageId,
    );
    cursor.toArray();
    return cursor.rowsWritten > 0;
  }

  #maxPos(chatId: string): number {
    return (
      this.#sql
        .exec<{ pos: number }>(
          "SELECT pos FROM dk_chat_messages WHERE chat_id = ? ORDER BY pos DESC LIMIT 1",
          chatId,
        )
        .toArray()[0]?.pos ?? 0
    );
  }
}
