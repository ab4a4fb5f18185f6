import type { Streams } from "@durablekit/streams";

/**
 * One UI message chunk of the AI SDK's UI message stream (`start`, `text-delta`, `finish`, …): a
 * JSON object with a string `type`. The adapter stores and replays it as is; only `start` is read
 * (its `messageId` is set to the turn's).
 */
export interface ChatUIMessageChunk {
  type: string;
  [field: string]: unknown;
}

/** Options of the {@link ChatTurns} constructor. */
export interface ChatTurnsOptions {
  /** The object's `Streams`: each turn is one of its streams. */
  streams: Streams;
  /** How long a finished or failed turn is kept after it ended. Default 600,000 (10 min). */
  settledRetentionMs?: number;
  /** How long a turn still streaming is kept after its last stored write. Default 3,600,000 (1 h). */
  abandonedRetentionMs?: number;
  /** Wire chunks per stored segment before it is flushed. Default 64. */
  maxSegmentChunks?: number;
  /**
   * Largest stored segment (its JSON, in UTF-8 bytes); a chunk that alone exceeds it is delivered
   * live but not stored (`chat:chunk-not-stored`). Default 65,536. Keep it at most the streams'
   * `maxChunkBytes`.
   */
  maxSegmentBytes?: number;
  /**
   * The longest a written chunk waits in memory before it is stored: the segment is flushed this
   * long after its oldest chunk was written, however steadily the model keeps writing. It bounds
   * what a restart can lose. Default 50.
   */
  maxFlushDelayMs?: number;
  /**
   * Delete a chat's ended turns when its next turn starts, instead of keeping each for
   * `settledRetentionMs`: the chat then holds at most its newest ended turn and the active one on
   * disk. A reader still replaying a deleted turn ends. Default false.
   */
  reclaimOnNextTurn?: boolean;
  /**
   * The chat id given to turns imported from the legacy `cf_ai_chat_stream_*` tables (one chat per
   * object there). Default: the object's name (`ctx.id.name`), else `"default"`.
   */
  legacyChatId?: string;
  /**
   * What a resume does with a turn left streaming by a restart (no writer in this isolate):
   * `"end-on-resume"` (default) ends it with an `error` chunk (`INTERRUPTED_TEXT`) before replaying
   * it; `"keep"` replays it and tails it, for a host whose turns are durable runs
   * (`chatTurnTask`): the run's recovery writes the rest.
   */
  interruptedTurns?: "end-on-resume" | "keep";
  /** Receives the adapter's events; a throwing listener is ignored. */
  onEvent?: (event: ChatEvent) => void;
}

/** What the adapter reports. */
export type ChatEvent =
  /** A chunk too large to store was delivered to live listeners only: a resume will not see it. */
  | {
      type: "chat:chunk-not-stored";
      chatId: string;
      turnId: string;
      chunkType: string;
      bytes: number;
    }
  /** A segment could not be stored (the turn's stream was deleted or expired): the turn is over. */
  | { type: "chat:flush-failed"; chatId: string; turnId: string; error: unknown }
  /** The legacy tables were imported and dropped at construction. */
  | { type: "chat:legacy-imported"; turns: number }
  /**
   * A legacy chunk too large for a stored segment (over `maxSegmentBytes`, and not a text or
   * reasoning delta that can be split) was left out of its imported turn.
   */
  | { type: "chat:legacy-chunk-skipped"; turnId: string; chunkType: string; bytes: number }
  /**
   * A legacy turn the object's streams refused even after oversized chunks were split or left
   * out (for example a `maxSegmentBytes` above the streams' `maxChunkBytes`): it was left out of
   * the import, which went on with the other turns.
   */
  | { type: "chat:legacy-turn-skipped"; turnId: string; error: unknown };

/** A turn as {@link ChatTurns.activeTurn} finds it. */
export interface ChatTurnInfo {
  chatId: string;
  turnId: string;
  /** The assistant message id the turn's `start` chunk carries. */
  messageId: string;
  state: "streaming" | "completed" | "errored";
  /** True when this isolate holds the turn's writer; false for a turn left by a restart. */
  live: boolean;
  createdAt: number;
  updatedAt: number;
}

/** Filters and paging of {@link ChatTurns.listTurns}; filters name fields of {@link ChatTurnInfo}. */
export interface ChatListTurnsOptions {
  /** Only turns in this state (or these states). */
  state?: ChatTurnInfo["state"] | ChatTurnInfo["state"][];
  /** Page size, 1–1000. Default 100. */
  limit?: number;
  /** The `next` token of the previous page (opaque). */
  cursor?: string;
}

/** One page of {@link ChatTurns.listTurns}, newest turn first. */
export interface ChatTurnList {
  items: ChatTurnInfo[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next: string | null;
}

/** Options of {@link ChatTurns.startTurn}. */
export interface ChatStartTurnOptions {
  /** The assistant message id (default a random UUID). */
  messageId?: string;
  /** The turn id (default a random UUID). */
  turnId?: string;
}
