import { MAX_CHAT_ID_LENGTH, MAX_MESSAGE_ID_LENGTH } from "@durablekit/chat-adapter";
import { isWellFormedName } from "@durablekit/compose";
import type { Env } from "../env";
import { describeValue, errorResponse, readJsonBody } from "../http";
import type { Route } from "../router";

/** The `ChatRoom` calls the routes make (typed here: the stub's inferred RPC type is too deep). */
interface ChatRoomCalls {
  answer(chatId: string, messageId: string | undefined): Promise<Response>;
  resume(chatId: string): Promise<Response>;
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
 *   scripted local model as a UI message stream;
 * - `GET /chat/:chatId/stream`: the active turn replayed from its `start` chunk, then tailed; 204
 *   when the chat has none.
 */
export const chatRoutes: Route[] = [
  {
    method: "POST",
    path: "/chat",
    handle: async (request, env) => {
      const read = await readJsonBody(request);
      if ("error" in read) return read.error;
      const body = read.body as { id?: unknown; messageId?: unknown } | null;
      const chatId = chatIdOf(body?.id);
      if (chatId === null) {
        return errorResponse(
          400,
          "demo/bad-chat",
          `The body needs "id": the chat id, 1 to ${MAX_CHAT_ID_LENGTH} characters without lone surrogates (the AI SDK's chat request { "id", "messages", … }); got ${describeValue(body?.id)} as "id".`,
        );
      }
      const given = body?.messageId;
      const absent = given === undefined || given === null || given === "";
      if (!absent && !isWellFormedName(given, MAX_MESSAGE_ID_LENGTH)) {
        return errorResponse(
          400,
          "demo/bad-chat",
          `"messageId", when given, is 1 to ${MAX_MESSAGE_ID_LENGTH} characters without lone surrogates; got ${describeValue(given)}.`,
        );
      }
      const messageId = !absent && typeof given === "string" ? given : undefined;
      return room(env, chatId).answer(chatId, messageId);
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
];
