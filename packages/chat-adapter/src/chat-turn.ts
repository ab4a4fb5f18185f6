import { utf8ByteLength } from "@durablekit/compose";
import type { StreamJson, StreamWriter } from "@durablekit/streams";
import { ChatArgumentError, ChatError, ChatTurnClosedError } from "./errors";
import type { ChatEvent, ChatUIMessageChunk } from "./types";

/**
 * The error text a turn ends with when its stream refused a write (it expired after a long pause,
 * or a limit): the live response and the stored turn both end with an `error` chunk carrying it.
 */
export const NOT_STORED_TEXT =
  "The answer could not be stored, so it ends here incomplete. Ask again to get a whole answer.";

/** The settings a turn needs from its owner. */
export interface TurnSettings {
  maxSegmentChunks: number;
  maxSegmentBytes: number;
  maxFlushDelayMs: number;
  emit: (event: ChatEvent) => void;
  ended: (turn: ChatTurn) => void;
}

/** A listener of a turn's chunks as they are written (the POST response). */
class LiveTap implements AsyncIterable<ChatUIMessageChunk> {
  readonly #queue: ChatUIMessageChunk[] = [];
  #ended = false;
  #wake: (() => void) | null = null;
  readonly #detach: (tap: LiveTap) => void;

  constructor(detach: (tap: LiveTap) => void) {
    this.#detach = detach;
  }

  push(chunk: ChatUIMessageChunk): void {
    this.#queue.push(chunk);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  /** The listener went away: drop what is queued, detach, and end the iteration. */
  close(): void {
    this.#queue.length = 0;
    this.#detach(this);
    this.end();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatUIMessageChunk> {
    for await (const batch of this.batches()) yield* batch;
  }

  /** Everything queued since the last batch, as one array, until the turn ends. */
  async *batches(): AsyncGenerator<ChatUIMessageChunk[]> {
    try {
      while (true) {
        if (this.#queue.length > 0) {
          yield this.#queue.splice(0);
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
 * Invariants:
 * - the stored chunks followed by `#segment` are exactly the chunks written so far, minus those
 *   reported as not stored, in order;
 * - no chunk stays in `#segment` longer than `maxFlushDelayMs`: the timer is armed when the
 *   segment gets its first chunk and is never pushed later by the chunks after it, so a writer
 *   that never pauses still has its chunks stored within that bound.
 */
export class ChatTurn {
  readonly chatId: string;
  readonly turnId: string;
  readonly messageId: string;
  readonly #writer: StreamWriter;
  readonly #settings: TurnSettings;
  #segment: ChatUIMessageChunk[] = [];
  /** JSON length of `#segment` as an array: `[` + items joined by `,` + `]`. */
  #segmentBytes = 2;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #state: "streaming" | "finished" | "failed" | "stopped" = "streaming";
  readonly #ended = new AbortController();
  #started: boolean;
  #notStored = 0;
  readonly #taps = new Set<LiveTap>();

  /** @internal Built by `ChatTurns.startTurn` and `ChatTurns.adoptTurn`. */
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

  /** How the turn stands: still `streaming`, or how it ended. */
  get state(): "streaming" | "finished" | "failed" | "stopped" {
    return this.#state;
  }

  /** @internal Whether any segment of the turn is stored (a reader then finds its `start`). */
  get hasStored(): boolean {
    return this.#writer.cursor > 0;
  }

  /**
   * Aborted when the turn ends, however it ends (finished, failed, stopped, superseded by a newer
   * turn, ended by a refused write): pass it to the model call (`streamText({ abortSignal })`), so a
   * stop from any client stops the model too.
   */
  get signal(): AbortSignal {
    return this.#ended.signal;
  }

  /** Chunks that were too large to store: delivered live, missing from a resume. */
  get chunksNotStored(): number {
    return this.#notStored;
  }

  // ── Writing ──

  /**
   * Writes one UI message chunk: live listeners get it at once; it is stored with its segment, at
   * most `maxFlushDelayMs` later. The first chunk of a turn is always a `start` carrying the turn's
   * `messageId` (one is written first when the model's stream does not begin with it).
   * @throws {ChatError} `chat/invalid-argument` for a chunk that is not an object with a string `type` or has no JSON form.
   * @throws {ChatError} `chat/closed` after the turn ended (also after a failed flush ended it,
   * reported as `chat:flush-failed`); `chat/storage` when this write's flush failed (the turn is
   * then over, ended with an `error` chunk).
   */
  write(chunk: ChatUIMessageChunk): void {
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
    this.#accept(JSON.parse(json) as ChatUIMessageChunk, json);
  }

  /**
   * Ends the turn as finished: the last segment and the settlement are one write. A no-op when the
   * turn already ended (finished, failed, superseded by a newer turn, or ended by a failed flush).
   * @throws {ChatError} `chat/storage` when the settlement could not be stored (the turn is then
   * ended with an `error` chunk where its stream still takes one).
   */
  finish(): void {
    if (this.#state !== "streaming") return;
    this.#settle("finished", null);
  }

  /**
   * Ends the turn as failed: an `error` chunk with `errorText` is written (live and stored) and the
   * turn's stream settles as errored — a failed turn is never silently truncated. A no-op when the
   * turn already ended, so a `catch` that calls it after any error is always safe. Never throws:
   * when the stream refuses the settlement, the turn still ends with an `error` chunk
   * ({@link NOT_STORED_TEXT}) and the failure is reported as `chat:flush-failed`.
   */
  fail(errorText: string): void {
    if (this.#state !== "streaming") return;
    const text = typeof errorText === "string" && errorText !== "" ? errorText : "The turn failed.";
    this.#endWith({ type: "error", errorText: text }, "failed", text);
  }

  /**
   * Ends the turn because a user asked to stop it: an `abort` chunk (the AI SDK's, with `reason`
   * when given) is written live and stored with the settlement (the stream settles `completed`),
   * and {@link signal} aborts. A no-op when the turn already ended; never throws (a refused write
   * ends the turn with an `error` chunk instead, reported as `chat:flush-failed`).
   */
  stop(reason?: string): void {
    if (this.#state !== "streaming") return;
    const chunk: ChatUIMessageChunk =
      typeof reason === "string" && reason !== "" ? { type: "abort", reason } : { type: "abort" };
    this.#endWith(chunk, "stopped", null);
  }

  /** The turn's chunks from now on, as they are written, ending with the turn. */
  live(): AsyncIterable<ChatUIMessageChunk> {
    return this.#tap();
  }

  /**
   * @internal {@link live} in batches: what the POST response sends, one buffer per batch. `close`
   * detaches it at once (the client went away), so nothing more is queued for it.
   */
  liveBatches(): AsyncIterable<ChatUIMessageChunk[]> & { close(): void } {
    const tap = this.#tap();
    return { [Symbol.asyncIterator]: () => tap.batches(), close: () => tap.close() };
  }

  #tap(): LiveTap {
    const tap = new LiveTap((done) => this.#taps.delete(done));
    if (this.#state === "streaming") this.#taps.add(tap);
    else tap.end();
    return tap;
  }

  /**
   * Stores the buffered segment now (what a resumer attaching in this isolate triggers, so it reads
   * every chunk written so far). No write when the buffer is empty or the turn is over.
   * @throws {ChatError} `chat/storage` when the turn's stream refused the write; the turn is then
   * over, ended with an `error` chunk ({@link NOT_STORED_TEXT}) live and, where its stream still
   * takes one, stored.
   */
  flush(): void {
    this.#clearTimer();
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

  #accept(chunk: ChatUIMessageChunk, json: string): void {
    for (const tap of this.#taps) tap.push(chunk);
    const bytes = utf8ByteLength(json);
    const { maxSegmentBytes, maxSegmentChunks, maxFlushDelayMs } = this.#settings;
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
    // The oldest buffered chunk sets the deadline; later chunks never move it.
    if (this.#timer === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        try {
          this.flush();
        } catch {
          // Reported through chat:flush-failed and the error chunk; the next write throws chat/closed.
        }
      }, maxFlushDelayMs);
    }
  }

  #clearTimer(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  // ── Ending ──

  /**
   * Ends a streaming turn with its last chunk (after its `start`, when nothing was written yet),
   * stored with the settlement. Never throws for a refused write: that already ended the turn
   * loudly (#broken); anything else is a defect.
   */
  #endWith(last: ChatUIMessageChunk, how: "failed" | "stopped", errorText: string | null): void {
    try {
      if (!this.#started) {
        this.#started = true;
        const start = { type: "start", messageId: this.messageId };
        this.#accept(start, JSON.stringify(start));
      }
      this.#accept(last, JSON.stringify(last));
      if (this.#state !== "streaming") return;
      this.#settle(how, errorText);
    } catch (error) {
      if (!(error instanceof ChatError && error.code === "chat/storage")) throw error;
    }
  }

  #settle(how: "finished" | "failed" | "stopped", errorText: string | null): void {
    this.#clearTimer();
    const chunks = this.#segment.length > 0 ? [this.#segment as unknown as StreamJson[]] : [];
    this.#segment = [];
    this.#segmentBytes = 2;
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
    }
    this.#endTaps();
  }

  /**
   * The turn's stream refused a write: the turn is over and must end loudly. Live listeners get an
   * `error` chunk before the end, and the stream is settled as errored with the same chunk where it
   * still takes a write (a limit refused the segment); a stream that is gone (expired) has nothing
   * left to resume.
   */
  #broken(error: unknown): void {
    this.#clearTimer();
    this.#segment = [];
    this.#segmentBytes = 2;
    this.#state = "failed";
    this.#settings.emit({
      type: "chat:flush-failed",
      chatId: this.chatId,
      turnId: this.turnId,
      error,
    });
    const chunk: ChatUIMessageChunk = { type: "error", errorText: NOT_STORED_TEXT };
    for (const tap of this.#taps) tap.push(chunk);
    try {
      this.#writer.error(NOT_STORED_TEXT, { chunks: [[chunk] as unknown as StreamJson[]] });
    } catch {
      // Gone or settled under the turn: a resume finds no active turn to show.
    }
    this.#endTaps();
  }

  #endTaps(): void {
    for (const tap of this.#taps) tap.end();
    this.#taps.clear();
    this.#settings.ended(this);
    this.#ended.abort();
  }

  #assertStreaming(): void {
    if (this.#state === "streaming") return;
    throw new ChatTurnClosedError(this.chatId, this.turnId, this.#state);
  }
}
