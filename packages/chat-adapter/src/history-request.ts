import { isWellFormedName } from "@durablekit/compose";
import { safeValidateUIMessages, type UIMessage } from "ai";
import { MAX_MESSAGE_ID_LENGTH } from "./chat-ids";
import { ChatArgumentError } from "./errors";

/** The triggers of the AI SDK's chat request the history answers. */
export const CHAT_TRIGGERS = ["submit-message", "regenerate-message"] as const;

/** An AI SDK chat request (`DefaultChatTransport`'s body) after it passed the door. */
export interface ChatRequest {
  /** The conversation as the client holds it: valid UI messages, the last one the user's. */
  messages: UIMessage[];
  trigger: (typeof CHAT_TRIGGERS)[number];
  /** The message a `regenerate-message` replaces, when the client named it. */
  messageId: string | null;
}

/** A short, safe description of a value for an error message. */
function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  }
  return Array.isArray(value) ? "an array" : typeof value;
}

/**
 * Checks an AI SDK chat request (`{ messages, trigger, messageId? }`, other fields ignored) the
 * way the AI SDK would accept its messages: `safeValidateUIMessages` of `ai` is the validator, so a
 * message the client's own code would refuse to load is refused here. Beyond it: at most
 * `maxMessages` messages, ids of 1–256 characters without lone surrogates and unique, the last
 * message the user's (what the turn answers), `trigger` one of {@link CHAT_TRIGGERS}.
 * @throws {ChatError} `chat/invalid-argument` naming what is wrong; nothing was read further.
 */
export async function readChatRequest(
  body: unknown,
  maxMessages: number,
  chatId: string,
): Promise<ChatRequest> {
  const refuse = (message: string) => new ChatArgumentError(message, chatId);
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw refuse("A chat request is an object { messages, trigger, messageId? }.");
  }
  const { messages, trigger, messageId } = body as Record<string, unknown>;
  if (typeof trigger !== "string" || !(CHAT_TRIGGERS as readonly string[]).includes(trigger)) {
    throw refuse(
      `"trigger" must be "submit-message" or "regenerate-message"; got ${describe(trigger)}.`,
    );
  }
  if (
    messageId !== undefined &&
    messageId !== null &&
    !isWellFormedName(messageId, MAX_MESSAGE_ID_LENGTH)
  ) {
    throw refuse(
      `"messageId", when given, is 1 to ${MAX_MESSAGE_ID_LENGTH} characters without lone surrogates; got ${describe(messageId)}.`,
    );
  }
  if (!Array.isArray(messages) || messages.length === 0) {
    throw refuse(`"messages" must be a non-empty array of UI messages; got ${describe(messages)}.`);
  }
  if (messages.length > maxMessages) {
    throw refuse(`"messages" holds at most ${maxMessages} messages; got ${messages.length}.`);
  }
  const checked = await safeValidateUIMessages({ messages });
  if (!checked.success) {
    const reason = checked.error instanceof Error ? checked.error.message : String(checked.error);
    throw new ChatArgumentError(
      `"messages" are not valid UI messages (the AI SDK's safeValidateUIMessages refused them): ${reason.slice(0, 500)}`,
      chatId,
    );
  }
  const valid = checked.data as UIMessage[];
  const seen = new Set<string>();
  for (const [index, message] of valid.entries()) {
    if (!isWellFormedName(message.id, MAX_MESSAGE_ID_LENGTH)) {
      throw refuse(
        `messages[${index}].id must be 1 to ${MAX_MESSAGE_ID_LENGTH} characters without lone surrogates.`,
      );
    }
    if (seen.has(message.id)) throw refuse(`messages[${index}].id "${message.id}" is used twice.`);
    seen.add(message.id);
  }
  const last = valid[valid.length - 1] as UIMessage;
  if (last.role !== "user") {
    throw refuse(
      `The last message must be the user's (the one the turn answers); got role "${last.role}".`,
    );
  }
  return {
    // What the validator returns: the messages with only the fields the AI SDK knows.
    messages: valid,
    trigger: trigger as ChatRequest["trigger"],
    messageId: typeof messageId === "string" ? messageId : null,
  };
}
