import { type ChatTurnEnd, MAX_CHAT_ID_LENGTH } from "@durablekit/chat-adapter";
import { isWellFormedName } from "@durablekit/compose";
import type { UIMessage } from "ai";
import type { Env } from "../env";
import { describeValue, errorResponse, json, readJsonBody } from "../http";
import type { Route } from "../router";

/** The `ChatRoom` calls the routes make (typed here: the stub's inferred RPC type is too deep). */
interface ChatRoomCalls {
  answer(chatId: string, request: unknown): Promise<Response>;
  resume(chatId: string): Promise<Response>;
  stop(chatId: string): Promise<{ stopped: boolean; turnId: string | null }>;
  messages(
    chatId: string,
  ): Promise<{ messages: UIMessage[]; ends: Record<string, ChatTurnEnd> } | null>;
}

function room(env: Env, chatId: string): ChatRoomCalls {
  return env.CHAT.getByName(chatId) as unknown as ChatRoomCalls;
}

/** A chat id the adapter accepts (1–240 characters, no lone surrogate), or null. */
function chatIdOf(value: unknown): string | null {
  return isWellFormedName(value, MAX_CHAT_ID_LENGTH) ? value : null;
}

/**
 * The AI SDK chat routes (`DefaultChatTransport` with `api: "/chat"`), one `ChatRoom` object per
 * chat id:
 * - `POST /chat` with `{ id, messages, trigger, messageId?, … }`: a new turn, answered by the
 *   scripted local model as a UI message stream; 400 `chat/invalid-argument` (nothing stored) for
 *   messages the AI SDK's validator refuses or a `trigger` other than `submit-message` and
 *   `regenerate-message`;
 * - `GET /chat/:chatId/stream`: the active turn replayed from its `start` chunk, then tailed; 204
 *   when the chat has none;
 * - `POST /chat/:chatId/stop`: stops the chat's active turn, from any client → `{ stopped, turnId }`;
 * - `GET /chat/:chatId/messages`: the chat's history `{ messages: UIMessage[], ends }` (what
 *   `useChat({ messages })` loads, and how each answer's turn ended by message id); 404
 *   `demo/unknown-chat` for a chat without one.
 */
export const chatRoutes: Route[] = [
  {
    method: "POST",
    path: "/chat",
    handle: async (request, env) => {
      const read = await readJsonBody(request);
      if ("error" in read) return read.error;
      const body = read.body as { id?: unknown; messageId?: unknown; messages?: unknown } | null;
      const chatId = chatIdOf(body?.id);
      if (chatId === null) {
        return errorResponse(
          400,
          "demo/bad-chat",
          `The body needs "id": the chat id, 1 to ${MAX_CHAT_ID_LENGTH} characters without lone surrogates (the AI SDK's chat request { "id", "messages", … }); got ${describeValue(body?.id)} as "id".`,
        );
      }
      return room(env, chatId).answer(chatId, body);
    },
  },
  {
    method: "GET",
    path: "/chat/:chatId/stream",
    handle: (_request, env, { chatId }) => {
      const id = chatIdOf(chatId);
      if (id === null) {
        return errorResponse(
          400,
          "demo/bad-chat",
          `The chat id in the path must be 1 to ${MAX_CHAT_ID_LENGTH} characters without lone surrogates; got ${describeValue(chatId)}.`,
        );
      }
      return room(env, id).resume(id);
    },
  },
  {
    method: "POST",
    path: "/chat/:chatId/stop",
    handle: async (_request, env, { chatId }) => {
      const id = chatIdOf(chatId);
      if (id === null) return badChatPath(chatId);
      return json(await room(env, id).stop(id));
    },
  },
  {
    method: "GET",
    path: "/chat/:chatId/messages",
    handle: async (_request, env, { chatId }) => {
      const id = chatIdOf(chatId);
      if (id === null) return badChatPath(chatId);
      const history = await room(env, id).messages(id);
      if (history === null) {
        return errorResponse(404, "demo/unknown-chat", `The chat "${id}" has no messages.`);
      }
      return json(history);
    },
  },
];

function badChatPath(chatId: unknown): Response {
  return errorResponse(
    400,
    "demo/bad-chat",
    `The chat id in the path must be 1 to ${MAX_CHAT_ID_LENGTH} characters without lone surrogates; got ${describeValue(chatId)}.`,
  );
}
