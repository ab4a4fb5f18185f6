import { DurableObject } from "cloudflare:workers";
import { type ChatTurn, ChatTurns, type UIMessageChunk } from "@durablekit/chat-adapter";
import { Alarms } from "@durablekit/compose";
import { Streams } from "@durablekit/streams";
import type { Env } from "./env";

/** What the scripted model answers, token by token (deterministic: no network, no randomness). */
export const SCRIPTED_ANSWER =
  "Durable Objects keep state next to the code that changes it. This answer is streamed one word " +
  "at a time from a scripted local model, stored in packed segments as it goes, and can be resumed " +
  "from its first chunk after a closed tab, a dropped connection or a restart of the server. " +
  "Every word arrives once, in order, and the turn always ends: finished, or with an error chunk.";

/** The delay between tokens unless `CHAT_TOKEN_DELAY_MS` says otherwise. */
const DEFAULT_TOKEN_DELAY_MS = 25;

/**
 * The scripted local model: the answer's words as `text-delta` chunks with a small delay, between
 * `text-start` and `text-end`, then `finish`. It can continue a turn from what is already stored,
 * which is what makes an interrupted turn end exactly as an uninterrupted one.
 */
export class ScriptedModel {
  readonly #delayMs: number;
  readonly #tokens: string[];

  constructor(delayMs: number, text = SCRIPTED_ANSWER) {
    this.#delayMs = delayMs;
    this.#tokens = text.match(/\S+\s*/g) ?? [];
  }

  /** The chunks of the whole answer, in order (without the adapter's `start`). */
  chunks(): UIMessageChunk[] {
    return [
      { type: "text-start", id: "text-1" },
      ...this.#tokens.map((delta) => ({ type: "text-delta", id: "text-1", delta })),
      { type: "text-end", id: "text-1" },
      { type: "finish" },
    ];
  }

  /**
   * Writes the answer's chunks after the first `from` (those already stored), pacing each token,
   * and finishes the turn; a write refused because the turn ended stops it.
   */
  async run(turn: ChatTurn, from = 0): Promise<void> {
    const chunks = this.chunks();
    try {
      for (let index = from; index < chunks.length; index++) {
        const chunk = chunks[index] as UIMessageChunk;
        if (chunk.type === "text-delta") await sleep(this.#delayMs);
        if (!turn.streaming) return;
        turn.write(chunk);
      }
      if (turn.streaming) turn.finish();
    } catch (error) {
      if (turn.streaming) turn.fail(error instanceof Error ? error.message : String(error));
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * One chat (the object is named by the chat id): its turns on `Streams`, swept by the object's
 * alarm. `POST /chat` starts a turn answered by the scripted model; `GET /chat/:chatId/stream`
 * resumes the active one. A turn interrupted by a restart is adopted on its first resume and
 * finished from the script — so it ends exactly as an uninterrupted turn, never truncated — unless
 * `CHAT_RECOVERY` is `end`, which ends it with an error chunk instead.
 */
export class ChatRoom extends DurableObject<Env> {
  readonly streams = new Streams(this.ctx);
  readonly chat = new ChatTurns(this.ctx, { streams: this.streams });
  readonly alarms = new Alarms(this.ctx, { parts: [this.streams] });

  override alarm() {
    return this.alarms.alarm();
  }

  /** `POST /chat`: a new turn, answered as a UI message stream while the model writes it. */
  answer(chatId: string, messageId: string | undefined): Response {
    const turn = this.chat.startTurn(chatId, messageId === undefined ? {} : { messageId });
    const response = this.chat.turnResponse(turn);
    this.ctx.waitUntil(this.#model().run(turn));
    return response;
  }

  /** `GET /chat/:chatId/stream`: 204 without an active turn, else the turn from its `start`. */
  resume(chatId: string): Response {
    const adopted = this.env.CHAT_RECOVERY === "end" ? null : this.chat.adoptTurn(chatId);
    if (adopted !== null) {
      // The chunks stored before the restart, minus the adapter's own `start`, are the script's
      // first ones: continue after them (chunks still buffered at the crash are written again).
      const written = adopted.stored.filter((chunk) => chunk.type !== "start").length;
      this.ctx.waitUntil(this.#model().run(adopted.turn, written));
    }
    return this.chat.resumeResponse(chatId);
  }

  #model(): ScriptedModel {
    const value = Number(this.env.CHAT_TOKEN_DELAY_MS ?? DEFAULT_TOKEN_DELAY_MS);
    return new ScriptedModel(Number.isFinite(value) && value >= 0 ? value : DEFAULT_TOKEN_DELAY_MS);
  }
}
