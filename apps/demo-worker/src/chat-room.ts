import { DurableObject } from "cloudflare:workers";
import {
  ChatHistory,
  type ChatTurnEnd,
  type ChatTurnEvidence,
  ChatTurns,
  type ChatTurnTaskInput,
  type ChatUIMessageChunk,
  chatTurnTask,
  isChatError,
} from "@durablekit/chat-adapter";
import { Alarms } from "@durablekit/compose";
import { Inspector, inspectorResponse } from "@durablekit/inspect";
import { Streams } from "@durablekit/streams";
import { type TaskStep, Tasks } from "@durablekit/tasks";
import type { UIMessage } from "ai";
import type { Env } from "./env";
import { errorResponse } from "./http";

/** What the scripted model answers, token by token (deterministic: no network, no randomness). */
export const SCRIPTED_ANSWER =
  "Durable Objects keep state next to the code that changes it. This answer is streamed one word " +
  "at a time from a scripted local model, stored in packed segments as it goes, and can be resumed " +
  "from its first chunk after a closed tab, a dropped connection or a restart of the server. " +
  "Every word arrives once, in order, and the turn always ends: finished, or with an error chunk.";

/** What the scripted model thinks before it answers, as reasoning parts. */
export const SCRIPTED_REASONING =
  "The question is about durability. Answer it plainly, one word at a time.";

/** The delay between tokens unless `CHAT_TOKEN_DELAY_MS` says otherwise. */
const DEFAULT_TOKEN_DELAY_MS = 25;

/**
 * The scripted local model: its reasoning's words as `reasoning-delta` chunks, then the answer's
 * words as `text-delta` chunks, each with a small delay, each part between its `…-start` and
 * `…-end`, then `finish`. It can continue a turn from what is already stored, which is what makes
 * an interrupted turn end exactly as an uninterrupted one.
 */
export class ScriptedModel {
  readonly #delayMs: number;
  readonly #tokens: string[];
  readonly #thoughts: string[];

  constructor(delayMs: number, text = SCRIPTED_ANSWER, reasoning = SCRIPTED_REASONING) {
    this.#delayMs = delayMs;
    this.#tokens = text.match(/\S+\s*/g) ?? [];
    this.#thoughts = reasoning.match(/\S+\s*/g) ?? [];
  }

  /** The chunks of the whole answer, in order (without the adapter's `start`). */
  chunks(): ChatUIMessageChunk[] {
    return [
      { type: "reasoning-start", id: "reasoning-1" },
      ...this.#thoughts.map((delta) => ({ type: "reasoning-delta", id: "reasoning-1", delta })),
      { type: "reasoning-end", id: "reasoning-1" },
      { type: "text-start", id: "text-1" },
      ...this.#tokens.map((delta) => ({ type: "text-delta", id: "text-1", delta })),
      { type: "text-end", id: "text-1" },
      { type: "finish" },
    ];
  }

  /**
   * The answer's chunks after those already stored (`continueFrom`, when this call continues an
   * interrupted turn), pacing each token; ends early when `signal` aborts (a stop).
   */
  async *answer(
    signal: AbortSignal,
    continueFrom: ChatTurnEvidence | null,
  ): AsyncGenerator<ChatUIMessageChunk> {
    const chunks = this.chunks();
    const from = continueFrom?.chunks.filter((chunk) => chunk.type !== "start").length ?? 0;
    for (let index = from; index < chunks.length; index++) {
      const chunk = chunks[index] as ChatUIMessageChunk;
      if (chunk.type === "text-delta" || chunk.type === "reasoning-delta")
        await sleep(this.#delayMs);
      if (signal.aborted) return;
      yield chunk;
    }
  }
}

/** A positive whole number of ms from a config var, else `fallback`. */
function positiveMs(value: string | undefined, fallback: number): number {
  const ms = Number(value ?? fallback);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : fallback;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The definition of a chat turn's run. */
export const CHAT_TURN = "chat.turn@v1";

/** How soon a turn cut by a restart is recovered by default: the tasks' claim deadline, in ms. */
export const DEFAULT_CHAT_RECOVERY_MS = 2_000;

/** The input of a turn's run. */
interface ChatTurnRun extends ChatTurnTaskInput {
  messageId: string;
}

/**
 * One chat (the object is named by the chat id): its turns on `Streams`, each a durable run of
 * `Tasks` (`chatTurnTask`), sharing the object's alarm. `POST /chat` starts a turn answered by the
 * scripted model; `GET /chat/:chatId/stream` resumes the active one; `POST /chat/:chatId/stop`
 * stops it; `GET /chat/:chatId/messages` is the chat's history (`ChatHistory`: the server's
 * copy of each answer, in the conversation's order, with how each turn ended). A turn cut by a restart is picked
 * up by the alarm at the claim deadline, with no client attached, and continued from its stored
 * chunks — so it ends exactly as an uninterrupted turn — unless `CHAT_RECOVERY` is `end`, which
 * ends it with an error chunk instead. Its assistant message lands in the history once it settles.
 */
export class ChatRoom extends DurableObject<Env> {
  readonly streams = new Streams(this.ctx);
  /** `CHAT_RECOVERY=end`: a turn cut by a restart ends with an error, on its first resume if that comes first. */
  readonly #endInterrupted = this.env.CHAT_RECOVERY === "end";
  readonly chat = new ChatTurns(this.ctx, {
    streams: this.streams,
    interruptedTurns: this.#endInterrupted ? "end-on-resume" : "keep",
  });
  readonly history = new ChatHistory(this.ctx, { chat: this.chat });
  readonly tasks = new Tasks(this.ctx, {
    claimTimeoutMs: positiveMs(this.env.CHAT_RECOVERY_MS, DEFAULT_CHAT_RECOVERY_MS),
    definitions: { [CHAT_TURN]: this.#turnDefinition() },
  });
  readonly alarms = new Alarms(this.ctx, { parts: [this.tasks, this.streams] });
  /** `GET /chat/:chatId/inspect/`: the room's turns and streams, shown only with `DEMO_DEBUG=on`. */
  readonly inspector = new Inspector(this.ctx, { parts: [this.streams, this.chat] });

  override alarm() {
    return this.alarms.alarm();
  }

  /** Serves the inspector below `basePath`; the object itself refuses unless `DEMO_DEBUG=on`. */
  inspect(request: Request, basePath: string): Promise<Response> {
    return inspectorResponse(request, this.inspector, {
      basePath,
      authorize: () => this.env.DEMO_DEBUG === "on",
    });
  }

  /**
   * `POST /chat`: the AI SDK's request through the history's door (validated, its new messages
   * stored, the turn started in its place), then the turn's run; answers with the turn as a UI
   * message stream while the model writes it, or 400 with the history's code (nothing stored).
   */
  async answer(chatId: string, request: unknown): Promise<Response> {
    let turn: Awaited<ReturnType<ChatHistory["startTurn"]>>["turn"];
    try {
      ({ turn } = await this.history.startTurn(chatId, request));
    } catch (error) {
      if (isChatError(error, "chat/invalid-argument") || isChatError(error, "chat/conflict")) {
        return errorResponse(400, error.code, error.message);
      }
      throw error;
    }
    const response = this.chat.turnResponse(turn);
    const input: ChatTurnRun = { chatId, turnId: turn.turnId, messageId: turn.messageId };
    await this.tasks.run(CHAT_TURN, input, { runId: turn.turnId });
    return response;
  }

  /** `GET /chat/:chatId/stream`: 204 without an active turn, else the turn from its `start`. */
  resume(chatId: string): Response {
    return this.chat.resumeResponse(chatId);
  }

  /** `POST /chat/:chatId/stop`: stops the chat's active turn (its run then settles as stopped). */
  stop(chatId: string): { stopped: boolean; turnId: string | null } {
    const turn = this.chat.stopTurn(chatId, "stopped by the user");
    return { stopped: turn !== null, turnId: turn?.turnId ?? null };
  }

  /**
   * `GET /chat/:chatId/messages`: the history (`useChat({ messages })` loads `messages`) and how
   * each answer's turn ended, by message id; null for a chat without one.
   */
  async messages(
    chatId: string,
  ): Promise<{ messages: UIMessage[]; ends: Record<string, ChatTurnEnd> } | null> {
    const entries = await this.history.entries(chatId);
    if (entries.length === 0) return null;
    const ends: Record<string, ChatTurnEnd> = {};
    for (const entry of entries) if (entry.end !== null) ends[entry.message.id] = entry.end;
    return { messages: entries.map((entry) => entry.message), ends };
  }

  /** A turn's run: the answer (live, or recovered after a restart), then its message remembered. */
  #turnDefinition() {
    const answer = chatTurnTask<ChatTurnRun>({
      chat: () => this.chat,
      model: (_input, { signal, continueFrom }) => this.#model().answer(signal, continueFrom),
      recover: () => (this.#endInterrupted ? "fail" : "continue"),
    });
    return async (input: ChatTurnRun, step: TaskStep) => {
      const result = await answer(input, step);
      await step.do("remember", async () => {
        const entry = await this.history.rememberTurn(input.turnId);
        return entry?.message.id ?? null;
      });
      return result;
    };
  }

  #model(): ScriptedModel {
    const value = Number(this.env.CHAT_TOKEN_DELAY_MS ?? DEFAULT_TOKEN_DELAY_MS);
    return new ScriptedModel(Number.isFinite(value) && value >= 0 ? value : DEFAULT_TOKEN_DELAY_MS);
  }
}
