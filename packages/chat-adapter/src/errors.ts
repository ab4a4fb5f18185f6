import {
  DurableKitError,
  type DurableKitErrorOptions,
  type ErrorCodeOf,
  errorGuard,
} from "@durablekit/compose";

/**
 * Every error this package throws is a {@link ChatError} with a stable string `code`. Codes are
 * part of the public contract; messages are for people and may change.
 *
 * - `chat/invalid-argument`: an argument or option is malformed (an empty chat id, a chunk without
 *   a string `type`, a non-positive `…Ms`); nothing was done.
 * - `chat/conflict`: `startTurn` with a turn id already used by a turn of the object; a second
 *   `ChatTurns` over the same object (construct parts once, in the constructor).
 * - `chat/closed`: a write reached a turn that already finished, failed, stopped or was replaced.
 * - `chat/storage`: the turn's stream refused a flush (it was deleted or expired under the turn);
 *   the turn is over. Retryable only in the sense that a new turn may be started.
 * - `chat/schema-too-new`: the history's tables (`dk_chat_*`) were written by a newer version of
 *   the package; deploy that version.
 */
export type ChatErrorCode = ErrorCodeOf<
  "chat",
  "invalid-argument" | "conflict" | "closed" | "storage" | "schema-too-new"
>;

/**
 * Base class of every error thrown by `@durablekit/chat-adapter` (a `DurableKitError` of
 * `@durablekit/compose`). `retryable` is derived from the code: only `chat/storage` is.
 */
export class ChatError extends DurableKitError<ChatErrorCode> {
  static override readonly retryableCodes: readonly ChatErrorCode[] = ["chat/storage"];
  override readonly name: string = "ChatError";
  /** The chat the failing call was about, when there was one. */
  readonly chatId: string | undefined;

  constructor(
    code: ChatErrorCode,
    message: string,
    options: DurableKitErrorOptions & { chatId?: string } = {},
  ) {
    super(code, message, options);
    this.chatId = options.chatId;
  }
}

/** True when `error` is a {@link ChatError}, optionally with the given code. */
export const isChatError = errorGuard(ChatError);

/** An argument or option is malformed; nothing was done. */
export class ChatArgumentError extends ChatError {
  override readonly name: string = "ChatArgumentError";
  constructor(message: string, chatId?: string) {
    super("chat/invalid-argument", message, chatId === undefined ? {} : { chatId });
  }
}

/** A write or settle reached a turn that is already over. */
export class ChatTurnClosedError extends ChatError {
  override readonly name: string = "ChatTurnClosedError";
  constructor(chatId: string, turnId: string, how: string) {
    super(
      "chat/closed",
      `The turn "${turnId}" of chat "${chatId}" already ${how}; start a new turn to write more.`,
      { chatId },
    );
  }
}
