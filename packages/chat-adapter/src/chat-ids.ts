import { isWellFormedName } from "@durablekit/compose";
import { ChatArgumentError } from "./errors";

/** Every turn's stream id starts with this; together with the tag and the marker it is reserved. */
export const TURN_STREAM_PREFIX = "dk-chat/";
/** A chat's turns share the tag `dk-chat/<chatId>`. */
const CHAT_TAG_PREFIX = "dk-chat/";
/** Longest chat id: the tag (prefix + id) must fit streams' 256-character names. */
export const MAX_CHAT_ID_LENGTH = 240;
/** Longest turn id: the stream id (prefix + id) must fit streams' 256-character names. */
export const MAX_TURN_ID_LENGTH = 200;
/** Longest assistant message id. */
export const MAX_MESSAGE_ID_LENGTH = 256;
/** The chat id of imported legacy turns when the object's name is not a usable chat id. */
export const FALLBACK_LEGACY_CHAT_ID = "default";

/**
 * Refuses anything but a usable chat id: a non-empty string of at most {@link MAX_CHAT_ID_LENGTH}
 * UTF-16 code units without a lone surrogate (the shared name rule of `docs/composing.md`).
 * @throws {ChatArgumentError} `chat/invalid-argument` otherwise.
 */
export function assertChatId(chatId: unknown): asserts chatId is string {
  if (!isWellFormedName(chatId, MAX_CHAT_ID_LENGTH)) {
    throw new ChatArgumentError(
      `A chat id must be a non-empty string of at most ${MAX_CHAT_ID_LENGTH} characters without lone surrogates.`,
    );
  }
}

/**
 * Refuses a malformed turn or message id (`what` names it in the message).
 * @throws {ChatArgumentError} `chat/invalid-argument`.
 */
export function assertId(what: "turnId" | "messageId", value: unknown, chatId?: string): string {
  const max = what === "turnId" ? MAX_TURN_ID_LENGTH : MAX_MESSAGE_ID_LENGTH;
  if (!isWellFormedName(value, max)) {
    throw new ChatArgumentError(
      `${what} must be a non-empty string of at most ${max} characters without lone surrogates.`,
      chatId,
    );
  }
  return value;
}

/** The tag every turn of a chat carries. */
export function chatTag(chatId: string): string {
  return `${CHAT_TAG_PREFIX}${chatId}`;
}

/** The stream of a turn. */
export function turnStreamId(turnId: string): string {
  return `${TURN_STREAM_PREFIX}${turnId}`;
}

/**
 * The chat id given to imported legacy turns when the host names none: the object's name when it
 * is a usable chat id, else {@link FALLBACK_LEGACY_CHAT_ID}. Never throws, whatever name the
 * platform gave the object (any length, any characters), so every object can construct.
 */
export function defaultLegacyChatId(ctx: DurableObjectState): string {
  const name: unknown = ctx.id?.name;
  return isWellFormedName(name, MAX_CHAT_ID_LENGTH) ? name : FALLBACK_LEGACY_CHAT_ID;
}
