import { migrateSchema } from "@durablekit/compose";
import { ChatError } from "./errors";

/**
 * Version 1: one row per message of a chat's history.
 *
 * - `pos`, `seq`: the conversation order is `ORDER BY pos, seq`. A message a request brought gets
 *   `pos = seq =` the chat's next number; the assistant message of a turn gets the `pos` of the
 *   user message that started it and the next `seq`, so it sits right after that message however
 *   many messages arrived while it streamed.
 * - `turn_id`: set for the assistant message a turn of this object writes (the server's copy);
 *   null for a message a client sent. A row with a `turn_id` is never written from a request.
 * - `message`: the `UIMessage` JSON; null while the turn is streaming (the row only holds the
 *   message's place then).
 * - `end_state`, `end_text`: how the turn ended (`finished`, `stopped` with its reason, `failed`
 *   with its error text); null for a client's message and while streaming.
 */
const V1: readonly string[] = [
  `CREATE TABLE dk_chat_messages (
     chat_id TEXT NOT NULL,
     message_id TEXT NOT NULL,
     pos INTEGER NOT NULL,
     seq INTEGER NOT NULL,
     role TEXT NOT NULL,
     turn_id TEXT,
     message TEXT,
     end_state TEXT CHECK (end_state IN ('finished', 'stopped', 'failed')),
     end_text TEXT,
     PRIMARY KEY (chat_id, message_id)
   ) WITHOUT ROWID`,
  "CREATE INDEX dk_chat_messages_order ON dk_chat_messages (chat_id, pos, seq)",
];

/** Migration steps: `STEPS[n - 1]` brings the schema to version n. Add a step, never edit one. */
const STEPS = [V1] as const;

/** The schema version of the history's tables (`dk_chat_*`) these sources write. */
export const CHAT_HISTORY_SCHEMA_VERSION = STEPS.length;

/**
 * Creates or migrates the history's tables through `migrateSchema` of `@durablekit/compose`
 * (table noun `chat`), forward only, in one transaction.
 * @throws {ChatError} `chat/schema-too-new` for tables written by a newer version.
 */
export function migrateChatHistorySchema(storage: DurableObjectStorage): void {
  migrateSchema(storage, {
    table: "chat",
    steps: STEPS,
    packageName: "@durablekit/chat-adapter",
    tooNew: (message) => new ChatError("chat/schema-too-new", message),
  });
}
