import type { TaskStep, TaskStepOptions } from "@durablekit/tasks";
import type { ChatTurn } from "./chat-turn";
import type { ChatTurns } from "./chat-turns";
import { ChatArgumentError } from "./errors";
import type { ChatUIMessageChunk } from "./types";

/** The input of a chat turn run: which turn it writes. The host adds what its model needs. */
export interface ChatTurnTaskInput {
  chatId: string;
  turnId: string;
}

/** What a turn interrupted by a restart left, read from its stream: the evidence for recovery. */
export interface ChatTurnEvidence {
  chatId: string;
  turnId: string;
  messageId: string;
  /** Every chunk stored before the interruption, from the turn's `start`. */
  chunks: ChatUIMessageChunk[];
  /** The text of the stored `text-delta` chunks, concatenated: the answer so far. */
  text: string;
  /** The last stored tool chunk (`tool-*`), or null. */
  lastToolChunk: ChatUIMessageChunk | null;
  /** Text and reasoning parts started (`*-start`) but not ended: a continuation writes into them. */
  openParts: { type: "text" | "reasoning"; id: string }[];
  /** Which recovery this is: 1 for the first after the live attempt. */
  recovery: number;
}

/**
 * What an interrupted turn does:
 * - `continue`: the model is called again with the evidence and writes what comes after it (the
 *   stored chunks are never written again);
 * - `retry`: the open parts are ended and the model answers again from the start, as a new
 *   segment of the same message;
 * - `fail`: the turn ends with an `error` chunk (`INTERRUPTED_TEXT`).
 */
export type ChatTurnRecovery = "continue" | "retry" | "fail";

/** How the model is asked for a turn's chunks. */
export interface ChatTurnModelContext {
  /** Aborted when the turn ends (a stop from any client) or the task's step is cancelled. */
  signal: AbortSignal;
  /** The evidence when this call continues an interrupted turn; null for a whole answer. */
  continueFrom: ChatTurnEvidence | null;
}

/** Options of {@link chatTurnTask}. */
export interface ChatTurnTaskOptions<Input extends ChatTurnTaskInput> {
  /** The object's `ChatTurns` (a function, so a definition map built before it can name it). */
  chat: () => ChatTurns;
  /**
   * The model: the turn's UI message chunks (a `start` it yields is folded into the turn's own).
   * Called once per attempt: live, or again after an interruption with `continueFrom`.
   */
  model: (input: Input, context: ChatTurnModelContext) => AsyncIterable<ChatUIMessageChunk>;
  /** Decides what an interrupted turn does, from its evidence and the run's input. Default: `"fail"`. */
  recover?: (
    evidence: ChatTurnEvidence,
    input: Input,
  ) => ChatTurnRecovery | Promise<ChatTurnRecovery>;
  /**
   * How many times a turn is recovered (after a restart, or after its model threw) before it is
   * ended with an error chunk instead. Default 2: a turn survives a restart and a crash of its
   * recovery. Keep it at most the `Tasks`' `maxAttemptsWithoutProgress` (4) less 2: that breaker
   * fails a run whose attempts keep dying before a step returns, and the attempt after the last
   * recovery must still run to end the turn.
   */
  maxRecoveries?: number;
  /** Options of the turn's step (`answer`): its retry policy bounds a model that keeps throwing. */
  step?: TaskStepOptions;
}

/** What a chat turn run returns. */
export interface ChatTurnTaskResult {
  turnId: string;
  messageId: string;
  /** How the turn ended: finished by the model, failed, stopped by a user, or ended elsewhere. */
  outcome: "finished" | "failed" | "stopped" | "ended";
  /** Recoveries the turn went through. */
  recoveries: number;
}

/** The text of an interrupted turn's error chunk when recovery ends it. */
export const RECOVERY_FAILED_TEXT =
  "The answer was interrupted (the server restarted) and could not be completed.";

/**
 * A task definition (for `@durablekit/tasks`) that runs one chat turn as a durable run: the model
 * call and the writing of its chunks happen in the run's step `answer`, the turn's stream is the
 * run's durable evidence, and a restart mid-turn is picked up by the object's alarm (the tasks'
 * claim deadline) with no client involved.
 *
 * ```ts
 * readonly tasks = new Tasks(this.ctx, {
 *   definitions: {
 *     "chat.turn@v1": chatTurnTask({ chat: () => this.chat, model: (input, { signal, continueFrom }) => … }),
 *   },
 * });
 * // POST /chat:
 * const turn = this.chat.startTurn(chatId);
 * const response = this.chat.turnResponse(turn);
 * await this.tasks.run("chat.turn@v1", { chatId, turnId: turn.turnId, messages }, { runId: turn.turnId });
 * return response;
 * ```
 *
 * The first attempt writes through the turn's live writer (the POST response streams from it).
 * A later attempt finds the writer gone (a restart) or the model failed: it reads the evidence from
 * the stream, asks `recover`, and continues after the stored chunks, retries, or ends the turn with
 * an error chunk. Either way the stream holds one `start`, every stored chunk once, and one end.
 * @throws {ChatError} `chat/invalid-argument` for a missing `chat` or `model`.
 */
export function chatTurnTask<Input extends ChatTurnTaskInput>(
  options: ChatTurnTaskOptions<Input>,
): (input: Input, step: TaskStep) => Promise<ChatTurnTaskResult> {
  if (typeof options?.chat !== "function" || typeof options.model !== "function") {
    throw new ChatArgumentError("chatTurnTask({ chat, model }) needs both functions.");
  }
  const maxRecoveries = options.maxRecoveries ?? 2;
  if (!Number.isSafeInteger(maxRecoveries) || maxRecoveries < 0) {
    throw new ChatArgumentError(`maxRecoveries must be a whole number ≥ 0; got ${maxRecoveries}.`);
  }
  return async (input, step) => {
    const chat = options.chat();
    const answer = async (attempt: number, signal: AbortSignal): Promise<ChatTurnTaskResult> => {
      const live = chat.liveTurn(input.turnId);
      if (live !== null && attempt === 1 && step.interrupted === null) {
        return write(live, input, null, signal, 0);
      }
      // Not the live attempt: the writer is gone (a restart) or the model failed. The evidence is
      // what the stream holds; a writer still live here is flushed into it first.
      const turn = live ?? adopt(chat, input);
      if (turn === null) {
        // Ended elsewhere (stopped, superseded, or settled before its step returned).
        const messageId = chat.activeTurn(input.chatId)?.messageId ?? "";
        return { turnId: input.turnId, messageId, outcome: "ended", recoveries: attempt - 1 };
      }
      turn.flush();
      const recovery = attempt - 1;
      const evidence = evidenceOf(turn, chat.storedChunks(input.turnId) ?? [], recovery);
      const decision =
        recovery > maxRecoveries ? "fail" : ((await options.recover?.(evidence, input)) ?? "fail");
      if (decision === "fail") {
        turn.fail(RECOVERY_FAILED_TEXT);
        return result(turn, "failed", recovery);
      }
      if (decision === "retry") {
        for (const part of evidence.openParts)
          turn.write({ type: `${part.type}-end`, id: part.id });
        return write(turn, input, null, signal, recovery);
      }
      if (decision === "continue") return write(turn, input, evidence, signal, recovery);
      throw new ChatArgumentError(
        `recover() must answer "continue", "retry" or "fail"; got ${String(decision)}.`,
        input.chatId,
      );
    };
    try {
      return await step.do("answer", options.step ?? {}, ({ attempt, signal }) =>
        answer(attempt, signal),
      );
    } catch (error) {
      // The step failed for good (its retries are spent, or the model threw a NonRetryableError):
      // the turn ends with an error chunk (a no-op once it ended). The tasks' end-of-attempt
      // signal (a park for the step's retry, a cancel) is not an Error and leaves the turn as is.
      if (error instanceof Error) {
        (chat.liveTurn(input.turnId) ?? adopt(chat, input))?.fail(RECOVERY_FAILED_TEXT);
      }
      throw error;
    }
  };

  /** Writes the model's chunks into the turn and finishes it. */
  async function write(
    turn: ChatTurn,
    input: Input,
    continueFrom: ChatTurnEvidence | null,
    stepSignal: AbortSignal,
    recoveries: number,
  ): Promise<ChatTurnTaskResult> {
    const signal = AbortSignal.any([turn.signal, stepSignal]);
    for await (const chunk of options.model(input, { signal, continueFrom })) {
      if (!turn.streaming) break;
      // The turn already has its start (written first, and stored): a model's own is folded in.
      if (chunk.type === "start" && turn.hasStored) continue;
      turn.write(chunk);
    }
    if (!turn.streaming) return result(turn, endOf(turn), recoveries);
    turn.finish();
    return result(turn, "finished", recoveries);
  }
}

/** The turn's writer at its stored end when it is still the chat's active turn, else null. */
function adopt(chat: ChatTurns, input: ChatTurnTaskInput): ChatTurn | null {
  if (chat.activeTurn(input.chatId)?.turnId !== input.turnId) return null;
  return chat.adoptTurn(input.chatId)?.turn ?? null;
}

/** How a turn that is no longer streaming ended. */
function endOf(turn: ChatTurn): ChatTurnTaskResult["outcome"] {
  const state = turn.state;
  return state === "streaming" ? "ended" : state;
}

function result(
  turn: ChatTurn,
  outcome: ChatTurnTaskResult["outcome"],
  recoveries: number,
): ChatTurnTaskResult {
  return { turnId: turn.turnId, messageId: turn.messageId, outcome, recoveries };
}

/** The evidence a turn's stored chunks give. */
function evidenceOf(
  turn: ChatTurn,
  chunks: ChatUIMessageChunk[],
  recovery: number,
): ChatTurnEvidence {
  let text = "";
  let lastToolChunk: ChatUIMessageChunk | null = null;
  const open = new Map<string, { type: "text" | "reasoning"; id: string }>();
  for (const chunk of chunks) {
    const id = typeof chunk.id === "string" ? chunk.id : null;
    if (chunk.type === "text-delta" && typeof chunk.delta === "string") text += chunk.delta;
    else if (chunk.type.startsWith("tool-")) lastToolChunk = chunk;
    if (id === null) continue;
    if (chunk.type === "text-start") open.set(`text:${id}`, { type: "text", id });
    else if (chunk.type === "reasoning-start")
      open.set(`reasoning:${id}`, { type: "reasoning", id });
    else if (chunk.type === "text-end") open.delete(`text:${id}`);
    else if (chunk.type === "reasoning-end") open.delete(`reasoning:${id}`);
  }
  return {
    chatId: turn.chatId,
    turnId: turn.turnId,
    messageId: turn.messageId,
    chunks,
    text,
    lastToolChunk,
    openParts: [...open.values()],
    recovery,
  };
}
