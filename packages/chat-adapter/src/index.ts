export {
  ChatHistory,
  type ChatHistoryEntry,
  type ChatHistoryOptions,
  type ChatHistoryTurn,
  TURN_NOT_KEPT_TEXT,
} from "./chat-history";
export {
  FALLBACK_LEGACY_CHAT_ID,
  MAX_CHAT_ID_LENGTH,
  MAX_MESSAGE_ID_LENGTH,
  MAX_TURN_ID_LENGTH,
  TURN_STREAM_PREFIX,
} from "./chat-ids";
export { ChatTurn, NOT_STORED_TEXT } from "./chat-turn";
export { ChatTurns, INTERRUPTED_TEXT } from "./chat-turns";
export {
  ChatArgumentError,
  ChatError,
  type ChatErrorCode,
  ChatTurnClosedError,
  isChatError,
} from "./errors";
export { CHAT_TRIGGERS, type ChatRequest, readChatRequest } from "./history-request";
export { CHAT_HISTORY_SCHEMA_VERSION } from "./history-schema";
export { type ChatTurnEnd, turnEndOf } from "./turn-message";
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
