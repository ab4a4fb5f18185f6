export {
  ChatTurn,
  ChatTurns,
  INTERRUPTED_TEXT,
  MAX_CHAT_ID_LENGTH,
  TURN_STREAM_PREFIX,
} from "./chat-turns";
export {
  ChatArgumentError,
  ChatError,
  type ChatErrorCode,
  ChatTurnClosedError,
  isChatError,
} from "./errors";
export type {
  ChatEvent,
  ChatTurnInfo,
  ChatTurnsOptions,
  StartTurnOptions,
  UIMessageChunk,
} from "./types";
export { chunkFrame, doneFrame, UI_MESSAGE_STREAM_HEADERS, uiMessageStreamResponse } from "./wire";
