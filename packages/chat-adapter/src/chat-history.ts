import type { UIMessage } from "ai";
import { check } from "./arguments";
import { assertChatId, assertId } from "./chat-ids";
import type { ChatTurn } from "./chat-turn";
import type { ChatTurns } from "./chat-turns";
import { ChatArgumentError, ChatError } from "./errors";
import { type ChatRequest, readChatRequest } from "./history-request";
import { type HistoryRow, HistoryStore } from "./history-store";
import { assembleTurnMessage, type ChatTurnEnd, turnEndOf } from "./turn-message";
import type { ChatStartTurnOptions } from "./types";

/** The error text of a turn whose stream was deleted (retention) before the history stored its message. */
export const TURN_NOT_KEPT_TEXT =
  "The answer was not kept: its turn was deleted before the history stored it.";

/** Options of the {@link ChatHistory} constructor. */
export interface ChatHistoryOptions {
  /** The object's `ChatTurns`: the history starts its turns and reads their stored chunks. */
  chat: ChatTurns;
  /** Most messages a request may carry (the client sends the whole conversation). Default 1,000. */
  maxRequestMessages?: number;
}

/** One message of a chat's history, in conversation order. */
export interface ChatHistoryEntry {
  message: UIMessage;
  /** The turn that wrote it (the server's assistant message); null for a message a client sent. */
  turnId: string | null;
  /** How that turn ended; null for a message a client sent. */
  end: ChatTurnEnd | null;
}

/** What {@link ChatHistory.startTurn} started. */
export interface ChatHistoryTurn {
  /** The turn's live writer: hand it to the model (or to `chatTurnTask` by its `turnId`). */
  turn: ChatTurn;
  /**
   * The conversation the turn answers, as the history holds it: every settled message up to and
   * including the user message that started the turn, in order. The server's copy of each turn's
   * assistant message stands where a client sent its own.
   */
  messages: UIMessage[];
  trigger: ChatRequest["trigger"];
}

/** The door checks of `@durablekit/compose`, throwing `chat/invalid-argument`. */
/**
 * A chat's message history, owned by the server: the messages clients sent and the assistant
 * message of each turn, in the conversation's order, as `useChat({ messages })` loads them.
 *
 * Construct one per object after its `ChatTurns` (`new ChatHistory(this.ctx, { chat: this.chat })`).
 * `startTurn` is the door of `POST /chat`: it validates the AI SDK's request (the AI SDK's own
 * `safeValidateUIMessages`, and `trigger`), stores the messages it does not hold yet, and starts
 * the turn that answers — the turn's message has its place right after the user message that
 * started it from that moment. `rememberTurn` stores the turn's settled message and how it ended;
 * a read does it for any turn that ended without it. A client's copy of a turn's message never
 * replaces the server's.
 */
export class ChatHistory {
  readonly #chat: ChatTurns;
  readonly #store: HistoryStore;
  readonly #maxRequestMessages: number;

  /**
   * Creates or migrates the history's table (`dk_chat_messages`).
   * @throws {ChatError} `chat/invalid-argument` for a malformed `ctx` or option;
   *   `chat/schema-too-new` for tables written by a newer version.
   */
  constructor(ctx: DurableObjectState, options: ChatHistoryOptions) {
    check.ctx(ctx, "new ChatHistory(ctx, { chat })");
    if (
      options === null ||
      typeof options !== "object" ||
      typeof options.chat?.startTurn !== "function"
    ) {
      throw new ChatArgumentError("new ChatHistory(ctx, { chat }) needs the object's ChatTurns.");
    }
    this.#chat = options.chat;
    this.#maxRequestMessages = check.count(
      options.maxRequestMessages,
      "maxRequestMessages",
      1_000,
      {
        max: 10_000,
      },
    );
    this.#store = new HistoryStore(ctx.storage);
  }

  // ── Requests ──

  /**
   * Answers an AI SDK chat request (`{ messages, trigger, messageId? }`, the body
   * `DefaultChatTransport` posts; other fields are ignored): validates it, stores the messages the
   * history does not hold yet, and starts the turn that answers its last (user) message — one
   * transaction. `submit-message` adds the turn after that message; `regenerate-message` first
   * deletes what the history holds after it (the answer being regenerated, and anything later).
   * Messages the history already holds are never rewritten from a request: a client's stale copy
   * of a turn's answer leaves the server's as it is.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id or request (messages the
   *   AI SDK's `safeValidateUIMessages` refuses, ids of the wrong shape or used twice, a last
   *   message that is not the user's, another `trigger`); nothing is stored and no turn starts.
   * @throws {ChatError} `chat/conflict` for a `messageId` or `turnId` already used (nothing is stored).
   */
  async startTurn(
    chatId: string,
    request: unknown,
    options: ChatStartTurnOptions = {},
  ): Promise<ChatHistoryTurn> {
    assertChatId(chatId);
    check.options(options, "startTurn() options");
    if (options.messageId !== undefined) assertId("messageId", options.messageId, chatId);
    const read = await readChatRequest(request, this.#maxRequestMessages, chatId);
    // Synchronous from here: nothing else of the object runs between the match and the writes.
    const known = this.#store.positions(chatId);
    if (options.messageId !== undefined && known.has(options.messageId)) {
      throw new ChatError(
        "chat/conflict",
        `The message id "${options.messageId}" is already in the history of chat "${chatId}"; start the turn with a new id.`,
        { chatId },
      );
    }
    const asked = read.messages[read.messages.length - 1] as UIMessage;
    const askedAt = known.get(asked.id) ?? null;
    const added = read.messages
      .filter((message) => !known.has(message.id))
      .map((message) => ({
        messageId: message.id,
        role: message.role,
        json: JSON.stringify(message),
      }));
    const turn = this.#store.transaction(() => {
      this.#store.accept({
        chatId,
        truncateAfter: read.trigger === "regenerate-message" ? askedAt : null,
        added,
      });
      const at = askedAt ?? this.#store.positionOf(chatId, asked.id);
      if (at === null) throw new Error("the asked message has no position after it was stored");
      // A turn id or message id already used throws here, and the transaction stores nothing.
      const started = this.#chat.startTurn(chatId, options);
      this.#store.reserve(chatId, started.messageId, started.turnId, at);
      return started;
    });
    const rows = this.#store.list(chatId);
    const end = rows.findIndex((row) => row.messageId === asked.id);
    const messages: UIMessage[] = [];
    for (const row of rows.slice(0, end + 1)) {
      if (row.message !== null) messages.push(JSON.parse(row.message) as UIMessage);
    }
    return { turn, messages, trigger: read.trigger };
  }

  // ── Turns ──

  /**
   * Stores a settled turn's assistant message — assembled from its stored chunks by the AI SDK's
   * `readUIMessageStream`, as `useChat` shows it — and how it ended, in the place the turn holds.
   * Once: a turn already remembered keeps what it has (so a replayed task step stores it once).
   * @returns the history's entry for the turn; null when the turn is still streaming, unknown
   *   (swept), or was not started through this history.
   * @throws {ChatError} `chat/invalid-argument` for a malformed turn id.
   */
  async rememberTurn(turnId: string): Promise<ChatHistoryEntry | null> {
    assertId("turnId", turnId);
    const info = this.#chat.getTurn(turnId);
    if (info === null || info.state === "streaming") return null;
    await this.#settle(info.chatId, info.messageId, turnId);
    const row = this.#store.list(info.chatId).find((each) => each.turnId === turnId);
    return row === undefined ? null : entryOf(row);
  }

  // ── Reading ──

  /**
   * The chat's history in conversation order: each message a client sent, and the assistant
   * message of each turn that ended, with how it ended, right after the user message that started
   * it. A turn still streaming is not in it yet (resume it instead). A turn that ended without
   * {@link rememberTurn} (its host died before, or it was ended by a resume or a stop) is
   * remembered now; one whose stream was deleted first shows as failed with
   * {@link TURN_NOT_KEPT_TEXT}. An unknown chat has an empty history.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  async entries(chatId: string): Promise<ChatHistoryEntry[]> {
    assertChatId(chatId);
    let rows = this.#store.list(chatId);
    const pending = rows.filter((row) => row.turnId !== null && row.message === null);
    let settled = false;
    for (const row of pending) {
      const info = this.#chat.getTurn(row.turnId as string);
      if (info?.state === "streaming") continue;
      if (info === null) {
        const message: UIMessage = { id: row.messageId, role: "assistant", parts: [] };
        this.#store.settle(chatId, row.messageId, JSON.stringify(message), {
          state: "failed",
          text: TURN_NOT_KEPT_TEXT,
        });
      } else {
        await this.#settle(chatId, row.messageId, row.turnId as string);
      }
      settled = true;
    }
    if (settled) rows = this.#store.list(chatId);
    return rows.filter((row) => row.message !== null).map(entryOf);
  }

  /**
   * The chat's history as `useChat({ messages })` loads it: the messages of {@link entries}.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  async messages(chatId: string): Promise<UIMessage[]> {
    return (await this.entries(chatId)).map((entry) => entry.message);
  }

  /** Assembles an ended turn's message and stores it with its end (a no-op once stored). */
  async #settle(chatId: string, messageId: string, turnId: string): Promise<void> {
    const chunks = this.#chat.storedChunks(turnId) ?? [];
    const message = await assembleTurnMessage(chunks, messageId);
    const end = turnEndOf(chunks);
    const text =
      end.state === "failed" ? end.errorText : end.state === "stopped" ? end.reason : null;
    this.#store.settle(chatId, messageId, JSON.stringify({ ...message, id: messageId }), {
      state: end.state,
      text,
    });
  }
}

/** A stored row as the history's entry. */
function entryOf(row: HistoryRow): ChatHistoryEntry {
  const message = JSON.parse(row.message as string) as UIMessage;
  return { message, turnId: row.turnId, end: endOf(row) };
}

function endOf(row: HistoryRow): ChatTurnEnd | null {
  switch (row.endState) {
    case "finished":
      return { state: "finished" };
    case "stopped":
      return { state: "stopped", reason: row.endText };
    case "failed":
      return { state: "failed", errorText: row.endText ?? "The turn failed." };
    default:
      return null;
  }
}
