import { claimPart } from "@durablekit/compose";
import type { StreamJson, StreamPage, StreamStatus, Streams } from "@durablekit/streams";
import { check } from "./arguments";
import {
  assertChatId,
  assertId,
  chatTag,
  defaultLegacyChatId,
  TURN_STREAM_PREFIX,
  turnStreamId,
} from "./chat-ids";
import { ChatTurn, type TurnSettings } from "./chat-turn";
import { ChatArgumentError, ChatError } from "./errors";
import { LegacyChatTables } from "./legacy";
import { TurnReplay } from "./turn-replay";
import type {
  ChatEvent,
  ChatListTurnsOptions,
  ChatStartTurnOptions,
  ChatTurnInfo,
  ChatTurnList,
  ChatTurnsOptions,
  ChatUIMessageChunk,
} from "./types";
import { chunkFramesText, UI_MESSAGE_STREAM_HEADERS, uiMessageBatchResponse } from "./wire";

/** The error text of a turn left streaming by a restart and ended on resume. */
export const INTERRUPTED_TEXT =
  "The turn was interrupted (the server restarted) before it finished.";

/**
 * The reason a resume's read is aborted with when its client goes away: one shared value, so a
 * cancel creates no error (and captures no stack) on the way out.
 */
const CLIENT_GONE = Object.freeze({ reason: "the client went away" });

/** The stream metadata that marks a stream as a chat turn. */
interface TurnMetadata {
  dkChat: 1;
  chatId: string;
  messageId: string;
  [field: string]: string | number;
}

/** The door checks of `@durablekit/compose`, throwing `chat/invalid-argument`. */
/** The marker of a turn's stream, or null for any other stream (one that merely shares a tag). */
function turnMetadata(status: StreamStatus, chatId: string): TurnMetadata | null {
  const meta = status.metadata;
  if (!status.streamId.startsWith(TURN_STREAM_PREFIX) || meta === undefined) return null;
  if (meta.dkChat !== 1 || meta.chatId !== chatId || typeof meta.messageId !== "string")
    return null;
  return meta as TurnMetadata;
}

/**
 * AI SDK chat turns in a Durable Object serving one or many chats: one durable stream of
 * `@durablekit/streams` per turn, found by chat id, packed into few rows, replayable from its
 * `start` chunk by `useChat({ resume: true })`, swept after it ends.
 *
 * Construct one per object (`new ChatTurns(this.ctx, { streams: this.streams })`) after its
 * `Streams`. Retention rides on the turns' streams (`ttlMs` while streaming, `settledTtlMs` once
 * ended), so the object's `Streams` part in `Alarms` sweeps them; `ChatTurns` needs no alarm of its
 * own. On first construction it imports and drops the legacy `cf_ai_chat_stream_*` tables.
 */
export class ChatTurns {
  readonly #streams: Streams;
  readonly #settledRetentionMs: number;
  readonly #abandonedRetentionMs: number;
  readonly #reclaimOnNextTurn: boolean;
  readonly #endInterruptedOnResume: boolean;
  readonly #settings: TurnSettings;
  readonly #onEvent: ((event: ChatEvent) => void) | undefined;
  /** The live turns of this isolate, by turn id. */
  readonly #live = new Map<string, ChatTurn>();
  /**
   * The live turn of each chat in this isolate, by chat id. With one `ChatTurns` per object (the
   * contract), a chat's live turn is its active turn: every turn starts here, after ending the
   * chat's previous one, and leaves this map when it ends.
   */
  readonly #liveByChat = new Map<string, ChatTurn>();

  // ── Construction ──

  /**
   * @throws {ChatError} `chat/invalid-argument` for a malformed `ctx` or option.
   * @throws {ChatError} `chat/conflict` when the object already has a ChatTurns: construct parts once, in the constructor.
   */
  constructor(ctx: DurableObjectState, options: ChatTurnsOptions) {
    check.ctx(ctx, "new ChatTurns(ctx, { streams })");
    if (
      options === null ||
      typeof options !== "object" ||
      typeof options.streams?.open !== "function"
    ) {
      throw new ChatArgumentError("new ChatTurns(ctx, { streams }) needs the object's Streams.");
    }
    check.callback(options.onEvent, "onEvent");
    const reclaimOnNextTurn = check.flag(options.reclaimOnNextTurn, "reclaimOnNextTurn", false);
    if (options.legacyChatId !== undefined) assertChatId(options.legacyChatId);
    const interrupted = check.oneOf(
      options.interruptedTurns,
      "interruptedTurns",
      ["end-on-resume", "keep"],
      "end-on-resume",
    );
    if (Object.hasOwn(options, "flushIdleMs")) {
      throw new ChatArgumentError(
        "new ChatTurns() option flushIdleMs is now maxFlushDelayMs: rename it (same meaning, in milliseconds).",
      );
    }
    const maxFlushDelayMs = check.ms(options.maxFlushDelayMs, "maxFlushDelayMs", 50, { min: 1 });
    this.#streams = options.streams;
    this.#settledRetentionMs = check.ms(options.settledRetentionMs, "settledRetentionMs", 600_000, {
      min: 1,
    });
    this.#abandonedRetentionMs = check.ms(
      options.abandonedRetentionMs,
      "abandonedRetentionMs",
      3_600_000,
      { min: 1 },
    );
    this.#reclaimOnNextTurn = reclaimOnNextTurn;
    this.#endInterruptedOnResume = interrupted === "end-on-resume";
    this.#onEvent = options.onEvent;
    this.#settings = {
      maxSegmentChunks: check.count(options.maxSegmentChunks, "maxSegmentChunks", 64),
      maxSegmentBytes: check.count(options.maxSegmentBytes, "maxSegmentBytes", 65_536),
      maxFlushDelayMs,
      emit: (event) => this.#emit(event),
      ended: (turn) => {
        if (this.#live.get(turn.turnId) === turn) this.#live.delete(turn.turnId);
        if (this.#liveByChat.get(turn.chatId) === turn) this.#liveByChat.delete(turn.chatId);
      },
    };
    const legacyChatId = options.legacyChatId ?? defaultLegacyChatId(ctx);
    const imported = new LegacyChatTables(ctx.storage).importInto(this.#streams, {
      streamIdOf: turnStreamId,
      tag: chatTag(legacyChatId),
      chatId: legacyChatId,
      ttlMs: this.#abandonedRetentionMs,
      settledTtlMs: this.#settledRetentionMs,
      maxSegmentBytes: this.#settings.maxSegmentBytes,
      emit: (event) => this.#emit(event),
    });
    if (imported !== null) this.#emit({ type: "chat:legacy-imported", turns: imported });
    claimPart(ctx, {
      part: "ChatTurns",
      construct: "this.chat = new ChatTurns(ctx, { streams: this.streams })",
      breaks:
        "cannot see the first one's live turns: a resume or a stop through it would miss them",
      conflict: (message) => new ChatError("chat/conflict", message),
    });
  }

  // ── Turns ──

  /**
   * Starts a turn of a chat (one stream row, which holds the turn's `messageId` from now on: every
   * replay of the turn begins with its `start`). A turn of the same chat still streaming is ended
   * first as failed (`error` chunk "superseded by a new turn"), so a chat has one active turn. With
   * `reclaimOnNextTurn`, the chat's turns that had already ended are deleted first.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id, turn id or message id.
   * @throws {ChatError} `chat/conflict` for a turn id already used (nothing is written).
   */
  startTurn(chatId: string, options: ChatStartTurnOptions = {}): ChatTurn {
    assertChatId(chatId);
    if (options === null || typeof options !== "object") {
      throw new ChatArgumentError("startTurn options must be an object.", chatId);
    }
    const turnId = assertId("turnId", options.turnId ?? crypto.randomUUID(), chatId);
    const messageId = assertId("messageId", options.messageId ?? crypto.randomUUID(), chatId);
    if (this.#reclaimOnNextTurn) this.#reclaimEnded(chatId);
    const previous = this.activeTurn(chatId);
    const metadata: TurnMetadata = { dkChat: 1, chatId, messageId };
    const writer = this.#streams.open(turnStreamId(turnId), {
      tag: chatTag(chatId),
      metadata,
      ttlMs: this.#abandonedRetentionMs,
      settledTtlMs: this.#settledRetentionMs,
    });
    // A turn id names one turn: a stream already there (live or settled) is never written again.
    if (!writer.created) {
      throw new ChatError(
        "chat/conflict",
        `The turn id "${turnId}" is already used by a turn of this object; start the turn with a new id.`,
        { chatId },
      );
    }
    if (previous !== null) this.#endTurn(previous, "The turn was superseded by a new turn.");
    const turn = new ChatTurn(chatId, turnId, messageId, writer, this.#settings);
    this.#live.set(turnId, turn);
    this.#liveByChat.set(chatId, turn);
    return turn;
  }

  /**
   * The chat's newest turn still streaming, or null. Reads the chat's turns through the tag index;
   * streams of the application that share a tag are never taken for a turn.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  activeTurn(chatId: string): ChatTurnInfo | null {
    assertChatId(chatId);
    const tag = chatTag(chatId);
    let cursor: string | undefined;
    do {
      const page = this.#streams.list({ tag, state: "streaming", limit: 50, cursor });
      for (const status of page.items) {
        const info = this.#infoOf(status, chatId);
        if (info !== null) return info;
      }
      cursor = page.next ?? undefined;
    } while (cursor !== undefined);
    return null;
  }

  /**
   * One page of the chat's turns still held (streaming, or ended and not yet swept), newest first,
   * through the tag index: pass a page's `next` back as `cursor`. Streams of the application that
   * share the chat's tag are skipped, so a page may hold fewer than `limit` turns and still have a
   * `next`. Read-only.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id, `limit` (1–1000, default
   *   100), `state` or `cursor`.
   */
  listTurns(chatId: string, options: ChatListTurnsOptions = {}): ChatTurnList {
    assertChatId(chatId);
    check.options(options, "listTurns() options");
    const limit = check.count(options.limit, "limit", 100, { max: 1000 });
    const states = options.state === undefined ? [] : [options.state].flat();
    for (const state of states) {
      check.oneOf(state, "state", ["streaming", "completed", "errored"], "streaming");
    }
    if (options.cursor !== undefined && typeof options.cursor !== "string") {
      throw new ChatArgumentError("cursor must be the next token of a previous page.");
    }
    let page: ReturnType<Streams["list"]>;
    try {
      page = this.#streams.list({
        tag: chatTag(chatId),
        state: states,
        limit,
        cursor: options.cursor,
      });
    } catch (error) {
      throw new ChatError(
        "chat/invalid-argument",
        `listTurns() cursor must be the next token of a previous page; got ${JSON.stringify(options.cursor)}.`,
        { chatId, cause: error },
      );
    }
    const items: ChatTurnInfo[] = [];
    for (const status of page.items) {
      const info = this.#infoOf(status, chatId);
      if (info !== null) items.push(info);
    }
    return { items, next: page.next };
  }

  /**
   * A turn's info by its id (`{ chatId, turnId, messageId, state, live, createdAt, updatedAt }`), or
   * null when no turn of that id is held. Read-only.
   * @throws {ChatError} `chat/invalid-argument` for a malformed turn id.
   */
  getTurn(turnId: string): ChatTurnInfo | null {
    const status = this.#streams.status(turnStreamId(assertId("turnId", turnId)));
    const chatId = status?.metadata?.chatId;
    if (status === null || typeof chatId !== "string") return null;
    return this.#infoOf(status, chatId);
  }

  /** A turn's info from its stream's status, or null for a stream that is not a turn of the chat. */
  #infoOf(status: StreamStatus, chatId: string): ChatTurnInfo | null {
    const meta = turnMetadata(status, chatId);
    if (meta === null) return null;
    const turnId = status.streamId.slice(TURN_STREAM_PREFIX.length);
    return {
      chatId,
      turnId,
      messageId: meta.messageId,
      state: status.state,
      live: this.#live.has(turnId),
      createdAt: status.createdAt,
      updatedAt: status.updatedAt,
    };
  }

  /**
   * Takes over the chat's active turn when no writer holds it in this isolate (a restart lost it):
   * returns a writer at the turn's stored end, with the chunks stored so far, so a host that can
   * regenerate the rest (a deterministic model, a resumable generation) finishes the turn instead
   * of letting {@link resumeResponse} end it as errored. Chunks that were still buffered when the
   * isolate died are not among `stored`: write them again. Null when the chat has no active turn or
   * its writer is live here.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  adoptTurn(chatId: string): { turn: ChatTurn; stored: ChatUIMessageChunk[] } | null {
    const active = this.activeTurn(chatId);
    if (active === null || active.live) return null;
    const streamId = turnStreamId(active.turnId);
    const stored = this.storedChunks(active.turnId) ?? [];
    const writer = this.#streams.open(streamId);
    const turn = new ChatTurn(chatId, active.turnId, active.messageId, writer, this.#settings);
    this.#live.set(active.turnId, turn);
    this.#liveByChat.set(chatId, turn);
    return { turn, stored };
  }

  /**
   * Stops the chat's active turn, from any client: the AI SDK's `abort` chunk (with `reason` when
   * given) ends it, stored with its settlement (`completed`), so every reader — the POST that
   * started it, a resume, a reload — sees the same end, once. A turn writing in this isolate is
   * stopped through its writer ({@link ChatTurn.stop}: its `signal` aborts, so the model call
   * stops); a turn left by a restart is ended on its stream. A client abort alone is only a
   * disconnect: the turn goes on until this is called.
   * @returns the turn that was stopped, or null when the chat had no active turn.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  stopTurn(chatId: string, reason?: string): ChatTurnInfo | null {
    const active = this.activeTurn(chatId);
    if (active === null) return null;
    const live = this.#live.get(active.turnId);
    if (live !== undefined) {
      live.stop(reason);
      return active;
    }
    const abort =
      typeof reason === "string" && reason !== "" ? { type: "abort", reason } : { type: "abort" };
    // A replay puts the turn's start before this chunk when nothing else of the turn is stored.
    this.#streams.write(turnStreamId(active.turnId), [[abort] as unknown as StreamJson], {
      settle: true,
    });
    return active;
  }

  /** The turn's writer in this isolate, or null (never started here, ended, or lost to a restart). */
  liveTurn(turnId: string): ChatTurn | null {
    return this.#live.get(turnId) ?? null;
  }

  /**
   * Every chunk of the turn stored so far, in order, read now (synchronously); null when the turn's
   * stream does not exist. Buffered chunks of a live turn are not among them until it flushes.
   */
  storedChunks(turnId: string): ChatUIMessageChunk[] | null {
    const streamId = turnStreamId(turnId);
    if (this.#streams.status(streamId) === null) return null;
    const stored: ChatUIMessageChunk[] = [];
    let from = 0;
    while (true) {
      const page = this.#streams.readPage(streamId, { from, limit: 256 });
      for (const { chunk } of page.chunks)
        stored.push(...(chunk as unknown as ChatUIMessageChunk[]));
      if (page.chunks.length === 0 || page.upToDate) break;
      from = page.next;
    }
    return stored;
  }

  /**
   * Every chunk of a turn from its `start`, then the chunks still to come, ending with the turn.
   * A live turn of this isolate flushes its buffer first, so nothing written is missed.
   *
   * The first chunk is always a `start` with the turn's `messageId`, also for a turn that stored
   * nothing before a restart (its stream row holds the id from {@link startTurn}): a stored
   * `start` is yielded as stored, and one is put first where none was stored yet. A `start` stored
   * after that one was put first is not repeated; its `messageMetadata` comes as a
   * `message-metadata` chunk.
   */
  async *read(
    turnId: string,
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<ChatUIMessageChunk> {
    const replay = this.#replayOf(turnId, null);
    yield* replay.opening();
    for await (const batch of this.#tail(turnStreamId(turnId), 0, replay, options.signal)) {
      yield* batch;
    }
  }

  /**
   * How a reader of the turn starts: a live turn of this isolate flushes its buffer first (so
   * nothing written is missed), and whether anything is stored decides where its `start` comes
   * from. `known` is what the caller already read of the turn (its message id, and whether
   * anything of it is stored), which spares a status read; null to read it here.
   */
  #replayOf(turnId: string, known: { messageId: string; stored: boolean } | null): TurnReplay {
    const live = this.#live.get(turnId);
    try {
      live?.flush();
    } catch {
      // The flush was refused: the turn ended with an error chunk, which the stream shows.
    }
    if (live !== undefined) return new TurnReplay(live.messageId, live.hasStored);
    if (known !== null) return new TurnReplay(known.messageId, known.stored);
    const status = this.#streams.status(turnStreamId(turnId));
    const stamped = status?.metadata?.messageId;
    // A missing stream is left to the read, which reports it.
    return new TurnReplay(typeof stamped === "string" ? stamped : null, status?.cursor !== 0);
  }

  /** The turn's stored segments from `from` on, as the reader gets them, then its live tail. */
  async *#tail(
    streamId: string,
    from: number,
    replay: TurnReplay,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<ChatUIMessageChunk[]> {
    const reading = this.#streams.readBatches(streamId, {
      from,
      batchSize: 256,
      ...(signal === undefined ? {} : { signal }),
    });
    for await (const rows of reading) {
      const out = replay.take(rows, []);
      if (out.length > 0) yield out;
    }
  }

  // ── HTTP ──

  /**
   * The response of `POST {api}`: the turn's chunks as they are written, as a UI message stream
   * (`data:` frames, then `data: [DONE]`). Call it right after {@link startTurn}, before writing.
   * A client that goes away does not end the turn.
   */
  turnResponse(turn: ChatTurn): Response {
    const tap = turn.liveBatches();
    return uiMessageBatchResponse("", tap, () => tap.close());
  }

  /**
   * The response of `GET {api}/{chatId}/stream`: `204` when the chat has no active turn; else the
   * whole turn from its `start` chunk, then its tail, then `data: [DONE]`. A turn left streaming by
   * a restart (no writer in this isolate) is first ended as failed with an `error` chunk
   * ({@link INTERRUPTED_TEXT}), so the client sees it end — never a silent truncation — unless
   * `interruptedTurns` is `"keep"` (durable turns: the run's recovery writes the rest, which this
   * response tails).
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  resumeResponse(chatId: string, options: { signal?: AbortSignal } = {}): Response {
    let turnId: string;
    let known: { messageId: string; stored: boolean } | null;
    const live = this.#liveByChat.get(chatId);
    if (live?.streaming === true) {
      // The chat's active turn, writing in this isolate: no lookup needed.
      turnId = live.turnId;
      known = null;
    } else {
      const active = this.activeTurn(chatId);
      if (active === null) return new Response(null, { status: 204 });
      turnId = active.turnId;
      known = null;
      if (!active.live && this.#endInterruptedOnResume) {
        // Ending a turn left by a restart stores its error chunk, so something of it is stored.
        known = { messageId: active.messageId, stored: true };
        this.#endTurn(active, INTERRUPTED_TEXT);
      }
    }
    // Everything stored so far is read now, in this synchronous block, and goes out as the first
    // buffer; the tail is read only when the client reads on.
    const streamId = turnStreamId(turnId);
    const replay = this.#replayOf(turnId, known);
    let head = chunkFramesText(replay.opening());
    let from = 0;
    let settled = false;
    for (;;) {
      let page: StreamPage;
      try {
        page = this.#streams.readPage(streamId, { from, limit: 256, decode: false });
      } catch (error) {
        // Swept under a writer that had not noticed yet: there is no turn to resume.
        if ((error as { code?: unknown } | null)?.code === "streams/not-found") {
          return new Response(null, { status: 204 });
        }
        throw error;
      }
      head += replay.frames(page.chunks);
      from = page.next;
      if (page.upToDate) {
        settled = page.state !== "streaming";
        break;
      }
    }
    if (settled) return uiMessageBatchResponse(head, null, () => {});
    // The client going away stops the read at once, also while it waits on the turn's tail.
    const gone = new AbortController();
    const signal =
      options.signal === undefined ? gone.signal : AbortSignal.any([options.signal, gone.signal]);
    return uiMessageBatchResponse(head, this.#tail(streamId, from, replay, signal), () =>
      gone.abort(CLIENT_GONE),
    );
  }

  /** The headers of a UI message stream response. */
  static readonly headers = UI_MESSAGE_STREAM_HEADERS;

  // ── Internals ──

  /** Ends a streaming turn as failed: through its writer when live here, else on its stream. */
  #endTurn(info: ChatTurnInfo, errorText: string): void {
    const live = this.#live.get(info.turnId);
    if (live !== undefined) {
      if (live.streaming) live.fail(errorText);
      return;
    }
    const chunks: StreamJson[] = [[{ type: "error", errorText }]];
    this.#streams.write(turnStreamId(info.turnId), chunks, { settle: { error: errorText } });
  }

  /** Deletes the chat's turns that already ended (`reclaimOnNextTurn`); live readers of them end. */
  #reclaimEnded(chatId: string): void {
    const tag = chatTag(chatId);
    const ended: string[] = [];
    let cursor: string | undefined;
    do {
      const page = this.#streams.list({ tag, state: ["completed", "errored"], limit: 100, cursor });
      for (const status of page.items) {
        if (turnMetadata(status, chatId) !== null) ended.push(status.streamId);
      }
      cursor = page.next ?? undefined;
    } while (cursor !== undefined);
    for (const streamId of ended) this.#streams.delete(streamId);
  }

  #emit(event: ChatEvent): void {
    try {
      this.#onEvent?.(event);
    } catch {
      // A throwing listener never fails a write.
    }
  }
}
