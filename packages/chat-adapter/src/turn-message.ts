import { readUIMessageStream, type UIMessage } from "ai";
import type { ChatUIMessageChunk } from "./types";

/**
 * How a turn ended, as every later reader of the history sees it:
 * - `finished`: the model's answer ended normally;
 * - `stopped`: a user stopped it (`stopTurn`); `reason` is the `abort` chunk's, when given;
 * - `failed`: it ended with an `error` chunk; `errorText` is that chunk's (a model error,
 *   `RECOVERY_FAILED_TEXT`, `INTERRUPTED_TEXT`, a superseded turn, …).
 */
export type ChatTurnEnd =
  | { state: "finished" }
  | { state: "stopped"; reason: string | null }
  | { state: "failed"; errorText: string };

/**
 * How a settled turn ended, read from its stored chunks: its last `finish`, `abort` or `error`
 * chunk decides (a settlement stores the ending chunk with it); a settled turn with none of them
 * (a model that never wrote `finish`) finished.
 */
export function turnEndOf(chunks: readonly ChatUIMessageChunk[]): ChatTurnEnd {
  for (let index = chunks.length - 1; index >= 0; index--) {
    const chunk = chunks[index] as ChatUIMessageChunk;
    if (chunk.type === "error") {
      const text = typeof chunk.errorText === "string" ? chunk.errorText : "The turn failed.";
      return { state: "failed", errorText: text };
    }
    if (chunk.type === "abort") {
      const reason = typeof chunk.reason === "string" && chunk.reason !== "" ? chunk.reason : null;
      return { state: "stopped", reason };
    }
    if (chunk.type === "finish") return { state: "finished" };
  }
  return { state: "finished" };
}

/**
 * The assistant message a turn's chunks make, assembled by the AI SDK's own `readUIMessageStream`
 * (what `useChat` shows for them), with `messageId` when no chunk carried one. An `error` chunk
 * does not stop the assembly: the message is what was shown up to it.
 */
export async function assembleTurnMessage(
  chunks: readonly ChatUIMessageChunk[],
  messageId: string,
): Promise<UIMessage> {
  const stream = new ReadableStream<ChatUIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  const messages = readUIMessageStream<UIMessage>({
    stream: stream as unknown as Parameters<typeof readUIMessageStream>[0]["stream"],
    onError: () => {},
  });
  for await (const message of messages) last = message;
  const message = last ?? { id: messageId, role: "assistant", parts: [] };
  return message.id === "" ? { ...message, id: messageId } : message;
}
