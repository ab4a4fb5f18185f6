export {
  FALLBACK_LEGACY_CHAT_ID,
  MAX_CHAT_ID_LENGTH,
  MAX_MESSAGE_ID_LENGTH,
  MAX_TURN_ID_LENGTH,
  TURN_STREAM_PREFIX,
} from "./chat-ids";
export { ChatTurn, NOT_STORED_TEXT } from "./chat-turn";
export { ChatTurns, INTERRUPTED_TEXT } from "./chat-turns";
export type {
  StartTurnOptions,
  UIMessageChunk,
} from "./deprecated";
export {
  ChatArgumentError,
  ChatError,
  type ChatErrorCode,
  ChatTurnClosedError,
  isChatError,
} from "./errors";
export {
  type ChatTurnEvidence,
  type ChatTurnModelContext,
  type ChatTurnRecovery,
  type ChatTurnTaskInput,
  type ChatTurnTaskOptions,
  type ChatTurnTaskResult,
  chatTurnTask,
  RECOVERY_FAILED_TEXT,
} from "./turn-task";
export type {
  ChatEvent,
  ChatListTurnsOptions,
  ChatStartTurnOptions,
  ChatTurnInfo,
  ChatTurnList,
  ChatTurnsOptions,
  ChatUIMessageChunk,
} from "./types";
export { chunkFrame, doneFrame, UI_MESSAGE_STREAM_HEADERS, uiMessageStreamResponse } from "./wire";
