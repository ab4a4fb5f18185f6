import type { StreamJson, StreamStatus, Streams, StreamWriter } from "@durablekit/streams";
import { ChatArgumentError, ChatError, ChatTurnClosedError } from "./errors";
import { LegacyChatTables } from "./legacy";
import type {
  ChatEvent,
  ChatTurnInfo,
  ChatTurnsOptions,
  StartTurnOptions,
  UIMessageChunk,
} from "./types";
import { UI_MESSAGE_STREAM_HEADERS, uiMessageStreamResponse } from "./wire";

/** Every turn's stream id starts with this; together with the tag and the marker it is reserved. */
export const TURN_STREAM_PREFIX = "dk-chat/";
/** A chat's turns share the tag `dk-chat/<chatId>`. */
const CHAT_TAG_PREFIX = "dk-chat/";
/** Longest chat id: the tag (prefix + id) must fit streams' 256-character names. */
export const MAX_CHAT_ID_LENGTH = 240;
/** The error text of a turn left streaming by a restart and ended on resume. */
export const INTERRUPTED_TEXT =
  "The turn was interrupted (the server restarted) before it finished.";

/** The stream metadata that marks a stream as a chat turn. */
interface TurnMetadata {
  dkChat: 1;
  chatId: string;
  messageId: string;
  [field: string]: string | number;
}

function positive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new ChatArgumentError(`${name} must be a positive integer; got ${String(value)}.`);
  }
  return value;
}

function assertChatId(chatId: unknown): asserts chatId is string {
  if (typeof chatId !== "string" || chatId.length === 0 || chatId.length > MAX_CHAT_ID_LENGTH) {
    throw new ChatArgumentError(
      `A chat id must be a non-empty string of at most ${MAX_CHAT_ID_LENGTH} characters.`,
    );
  }
}

/** The marker of a turn's stream, or null for any other stream (one that merely shares a tag). */
function turnMetadata(status: StreamStatus, chatId: string): TurnMetadata | null {
  const meta = status.metadata;
  if (!status.streamId.startsWith(TURN_STREAM_PREFIX) || meta === undefined) return null;
  if (meta.dkChat !== 1 || meta.chatId !== chatId || typeof meta.messageId !== "string")
    return null;
  return meta as TurnMetadata;
}

/** The UTF-8 length of a string. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** The settings a turn needs from its owner. */
interface TurnSettings {
  maxSegmentChunks: number;
  maxSegmentBytes: number;
  flushIdleMs: number;
  emit: (event: ChatEvent) => void;
  ended: (turn: ChatTurn) => void;
}

/** A listener of a turn's chunks as they are written (the POST response). */
class LiveTap implements AsyncIterable<UIMessageChunk> {
  readonly #queue: UIMessageChunk[] = [];
  #ended = false;
  #wake: (() => void) | null = null;
  readonly #detach: (tap: LiveTap) => void;

  constructor(detach: (tap: LiveTap) => void) {
    this.#detach = detach;
  }

  push(chunk: UIMessageChunk): void {
    this.#queue.push(chunk);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<UIMessageChunk> {
    try {
      while (true) {
        const next = this.#queue.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (this.#ended) return;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = null;
      }
    } finally {
      this.#detach(this);
    }
  }
}

/**
 * The writer of one live turn in this isolate: packs wire chunks into segments (one stored row per
 * segment) and hands every chunk to live listeners at once.
 *
 * Invariant: the stored chunks followed by `#segment` are exactly the chunks written so far, minus
 * those reported as not stored, in order.
 */
export class ChatTurn {
  readonly chatId: string;
  readonly turnId: string;
  readonly messageId: string;
  readonly #writer: StreamWriter;
  readonly #settings: TurnSettings;
  #segment: UIMessageChunk[] = [];
  /** JSON length of `#segment` as an array: `[` + items joined by `,` + `]`. */
  #segmentBytes = 2;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #state: "streaming" | "finished" | "failed" = "streaming";
  #started: boolean;
  #notStored = 0;
  readonly #taps = new Set<LiveTap>();

  /** @internal Built by {@link ChatTurns.startTurn}. */
  constructor(
    chatId: string,
    turnId: string,
    messageId: string,
    writer: StreamWriter,
    settings: TurnSettings,
  ) {
    this.chatId = chatId;
    this.turnId = turnId;
    this.messageId = messageId;
    this.#writer = writer;
    this.#settings = settings;
    this.#started = writer.cursor > 0;
  }

  /** Whether the turn still accepts chunks. */
  get streaming(): boolean {
    return this.#state === "streaming";
  }

  /** Chunks that were too large to store: delivered live, missing from a resume. */
  get chunksNotStored(): number {
    return this.#notStored;
  }

  // ── Writing ──

  /**
   * Writes one UI message chunk: live listeners get it at once; it is stored with the next
   * segment. The first chunk of a turn is always a `start` carrying the turn's `messageId` (one is
   * written first when the model's stream does not begin with it).
   * @throws {ChatError} `chat/invalid-argument` for a chunk that is not an object with a string `type` or has no JSON form.
   * @throws {ChatError} `chat/closed` after the turn ended (also after an idle flush failed, which
   * ended it and was reported as `chat:flush-failed`); `chat/storage` when this write's flush failed.
   */
  write(chunk: UIMessageChunk): void {
    this.#assertStreaming();
    if (chunk === null || typeof chunk !== "object" || typeof chunk.type !== "string") {
      throw new ChatArgumentError(
        "A UI message chunk is an object with a string type.",
        this.chatId,
      );
    }
    let json: string;
    try {
      json = JSON.stringify(chunk);
    } catch (cause) {
      throw new ChatError("chat/invalid-argument", "The chunk has no JSON form.", {
        chatId: this.chatId,
        cause,
      });
    }
    if (!this.#started) {
      this.#started = true;
      if (chunk.type === "start") {
        const start = { ...chunk, messageId: this.messageId };
        this.#accept(start, JSON.stringify(start));
        return;
      }
      const start = { type: "start", messageId: this.messageId };
      this.#accept(start, JSON.stringify(start));
    }
    this.#accept(JSON.parse(json) as UIMessageChunk, json);
  }

  /**
   * Ends the turn as finished: the last segment and the settlement are one write.
   * @throws {ChatError} `chat/closed` when the turn already ended.
   */
  finish(): void {
    this.#assertStreaming();
    this.#settle("finished", null);
  }

  /**
   * Ends the turn as failed: an `error` chunk with `errorText` is written (live and stored) and the
   * turn's stream settles as errored — a failed turn is never silently truncated.
   * @throws {ChatError} `chat/closed` when the turn already ended.
   */
  fail(errorText: string): void {
    this.#assertStreaming();
    const text = typeof errorText === "string" && errorText !== "" ? errorText : "The turn failed.";
    if (!this.#started) this.write({ type: "start" });
    const chunk = { type: "error", errorText: text };
    this.#accept(chunk, JSON.stringify(chunk));
    this.#settle("failed", text);
  }

  /** The turn's chunks from now on, as they are written, ending with the turn. */
  live(): AsyncIterable<UIMessageChunk> {
    const tap = new LiveTap((done) => this.#taps.delete(done));
    if (this.#state === "streaming") this.#taps.add(tap);
    else tap.end();
    return tap;
  }

  /**
   * Stores the buffered segment now (what a resumer attaching in this isolate triggers, so it reads
   * every chunk written so far). No write when the buffer is empty.
   * @throws {ChatError} `chat/storage` when the turn's stream refused the write.
   */
  flush(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#segment.length === 0 || this.#state !== "streaming") return;
    const segment = this.#segment;
    this.#segment = [];
    this.#segmentBytes = 2;
    try {
      this.#writer.append(segment as unknown as StreamJson[]);
    } catch (cause) {
      this.#broken(cause);
      throw new ChatError("chat/storage", `The turn "${this.turnId}" could not be stored.`, {
        chatId: this.chatId,
        cause,
      });
    }
  }

  // ── Packing ──

  #accept(chunk: UIMessageChunk, json: string): void {
    for (const tap of this.#taps) tap.push(chunk);
    const bytes = utf8Length(json);
    const { maxSegmentBytes, maxSegmentChunks, flushIdleMs } = this.#settings;
    if (bytes + 2 > maxSegmentBytes) {
      // Too large for any segment: delivered live above, reported, not stored.
      this.#notStored += 1;
      this.#settings.emit({
        type: "chat:chunk-not-stored",
        chatId: this.chatId,
        turnId: this.turnId,
        chunkType: chunk.type,
        bytes,
      });
      return;
    }
    const grown = this.#segmentBytes + bytes + (this.#segment.length > 0 ? 1 : 0);
    if (grown > maxSegmentBytes) this.flush();
    this.#segmentBytes += bytes + (this.#segment.length > 0 ? 1 : 0);
    this.#segment.push(chunk);
    if (this.#segment.length >= maxSegmentChunks) {
      this.flush();
      return;
    }
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      try {
        this.flush();
      } catch {
        // Reported through chat:flush-failed; the turn is over and the next write throws chat/closed.
      }
    }, flushIdleMs);
  }

  // ── Ending ──

  #settle(how: "finished" | "failed", errorText: string | null): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const chunks = this.#segment.length > 0 ? [this.#segment as unknown as StreamJson[]] : [];
    this.#segment = [];
    this.#state = how;
    try {
      if (errorText === null) this.#writer.close({ chunks });
      else this.#writer.error(errorText, { chunks });
    } catch (cause) {
      this.#broken(cause);
      throw new ChatError("chat/storage", `The end of turn "${this.turnId}" could not be stored.`, {
        chatId: this.chatId,
        cause,
      });
    } finally {
      this.#endTaps();
    }
  }

  #broken(error: unknown): void {
    this.#state = "failed";
    this.#settings.emit({
      type: "chat:flush-failed",
      chatId: this.chatId,
      turnId: this.turnId,
      error,
    });
    this.#endTaps();
  }

  #endTaps(): void {
    for (const tap of this.#taps) tap.end();
    this.#taps.clear();
    this.#settings.ended(this);
  }

  #assertStreaming(): void {
    if (this.#state === "streaming") return;
    throw new ChatTurnClosedError(this.chatId, this.turnId, this.#state);
  }
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
  readonly #settings: TurnSettings;
  readonly #onEvent: ((event: ChatEvent) => void) | undefined;
  /** The live turns of this isolate, by turn id. */
  readonly #live = new Map<string, ChatTurn>();

  // ── Construction ──

  /**
   * @throws {ChatError} `chat/invalid-argument` for a malformed `ctx` or option.
   */
  constructor(ctx: DurableObjectState, options: ChatTurnsOptions) {
    if (typeof ctx?.storage?.sql?.exec !== "function") {
      throw new ChatArgumentError(
        "new ChatTurns(ctx, { streams }) takes the Durable Object's state (this.ctx) of a SQLite-backed object.",
      );
    }
    if (
      options === null ||
      typeof options !== "object" ||
      typeof options.streams?.open !== "function"
    ) {
      throw new ChatArgumentError("new ChatTurns(ctx, { streams }) needs the object's Streams.");
    }
    if (options.onEvent !== undefined && typeof options.onEvent !== "function") {
      throw new ChatArgumentError("onEvent must be a function.");
    }
    this.#streams = options.streams;
    this.#settledRetentionMs = positive("settledRetentionMs", options.settledRetentionMs, 600_000);
    this.#abandonedRetentionMs = positive(
      "abandonedRetentionMs",
      options.abandonedRetentionMs,
      3_600_000,
    );
    this.#onEvent = options.onEvent;
    this.#settings = {
      maxSegmentChunks: positive("maxSegmentChunks", options.maxSegmentChunks, 16),
      maxSegmentBytes: positive("maxSegmentBytes", options.maxSegmentBytes, 65_536),
      flushIdleMs: positive("flushIdleMs", options.flushIdleMs, 50),
      emit: (event) => this.#emit(event),
      ended: (turn) => {
        if (this.#live.get(turn.turnId) === turn) this.#live.delete(turn.turnId);
      },
    };
    const legacyChatId = options.legacyChatId ?? ctx.id?.name ?? "default";
    assertChatId(legacyChatId);
    const imported = new LegacyChatTables(ctx.storage).importInto(this.#streams, {
      streamIdOf: (turnId) => `${TURN_STREAM_PREFIX}${turnId}`,
      tag: `${CHAT_TAG_PREFIX}${legacyChatId}`,
      chatId: legacyChatId,
      ttlMs: this.#abandonedRetentionMs,
      settledTtlMs: this.#settledRetentionMs,
    });
    if (imported !== null) this.#emit({ type: "chat:legacy-imported", turns: imported });
  }

  // ── Turns ──

  /**
   * Starts a turn of a chat (one stream row). A turn of the same chat still streaming is ended
   * first as failed (`error` chunk "superseded by a new turn"), so a chat has one active turn.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id or option.
   */
  startTurn(chatId: string, options: StartTurnOptions = {}): ChatTurn {
    assertChatId(chatId);
    const turnId = options.turnId ?? crypto.randomUUID();
    const messageId = options.messageId ?? crypto.randomUUID();
    if (typeof turnId !== "string" || turnId === "" || turnId.length > 200) {
      throw new ChatArgumentError(
        "turnId must be a non-empty string of at most 200 characters.",
        chatId,
      );
    }
    if (typeof messageId !== "string" || messageId === "") {
      throw new ChatArgumentError("messageId must be a non-empty string.", chatId);
    }
    const previous = this.activeTurn(chatId);
    if (previous !== null) this.#endTurn(previous, "The turn was superseded by a new turn.");
    const metadata: TurnMetadata = { dkChat: 1, chatId, messageId };
    const writer = this.#streams.open(`${TURN_STREAM_PREFIX}${turnId}`, {
      tag: `${CHAT_TAG_PREFIX}${chatId}`,
      metadata,
      ttlMs: this.#abandonedRetentionMs,
      settledTtlMs: this.#settledRetentionMs,
    });
    const turn = new ChatTurn(chatId, turnId, messageId, writer, this.#settings);
    this.#live.set(turnId, turn);
    return turn;
  }

  /**
   * The chat's newest turn still streaming, or null. Reads the chat's turns through the tag index;
   * streams of the application that share a tag are never taken for a turn.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  activeTurn(chatId: string): ChatTurnInfo | null {
    assertChatId(chatId);
    const tag = `${CHAT_TAG_PREFIX}${chatId}`;
    let cursor: string | undefined;
    do {
      const page = this.#streams.list({ tag, state: "streaming", limit: 50, cursor });
      for (const status of page.items) {
        const meta = turnMetadata(status, chatId);
        if (meta === null) continue;
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
      cursor = page.next ?? undefined;
    } while (cursor !== undefined);
    return null;
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
  adoptTurn(chatId: string): { turn: ChatTurn; stored: UIMessageChunk[] } | null {
    const active = this.activeTurn(chatId);
    if (active === null || active.live) return null;
    const streamId = `${TURN_STREAM_PREFIX}${active.turnId}`;
    const stored: UIMessageChunk[] = [];
    let from = 0;
    while (true) {
      const page = this.#streams.readPage(streamId, { from, limit: 100 });
      for (const { chunk } of page.chunks) stored.push(...(chunk as unknown as UIMessageChunk[]));
      if (page.chunks.length === 0 || page.upToDate) break;
      from = page.next;
    }
    const writer = this.#streams.open(streamId);
    const turn = new ChatTurn(chatId, active.turnId, active.messageId, writer, this.#settings);
    this.#live.set(active.turnId, turn);
    return { turn, stored };
  }

  /**
   * Every chunk of a turn from its `start`, then the chunks still to come, ending with the turn.
   * A live turn of this isolate flushes its buffer first, so nothing written is missed.
   */
  async *read(
    turnId: string,
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<UIMessageChunk> {
    this.#live.get(turnId)?.flush();
    for await (const { chunk } of this.#streams.read(`${TURN_STREAM_PREFIX}${turnId}`, options)) {
      for (const item of chunk as UIMessageChunk[]) yield item;
    }
  }

  // ── HTTP ──

  /**
   * The response of `POST {api}`: the turn's chunks as they are written, as a UI message stream
   * (`data:` frames, then `data: [DONE]`). Call it right after {@link startTurn}, before writing.
   * A client that goes away does not end the turn.
   */
  turnResponse(turn: ChatTurn): Response {
    return uiMessageStreamResponse(turn.live());
  }

  /**
   * The response of `GET {api}/{chatId}/stream`: `204` when the chat has no active turn; else the
   * whole turn from its `start` chunk, then its tail, then `data: [DONE]`. A turn left streaming by
   * a restart (no writer in this isolate) is first ended as failed with an `error` chunk
   * ({@link INTERRUPTED_TEXT}), so the client sees it end — never a silent truncation.
   * @throws {ChatError} `chat/invalid-argument` for a malformed chat id.
   */
  resumeResponse(chatId: string, options: { signal?: AbortSignal } = {}): Response {
    const active = this.activeTurn(chatId);
    if (active === null) return new Response(null, { status: 204 });
    if (!active.live) this.#endTurn(active, INTERRUPTED_TEXT);
    return uiMessageStreamResponse(this.read(active.turnId, options));
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
    const streamId = `${TURN_STREAM_PREFIX}${info.turnId}`;
    const chunks: StreamJson[] = [[{ type: "error", errorText }]];
    this.#streams.write(streamId, chunks, { settle: { error: errorText } });
  }

  #emit(event: ChatEvent): void {
    try {
      this.#onEvent?.(event);
    } catch {
      // A throwing listener never fails a write.
    }
  }
}
