import type { UIMessageChunk } from "./types";

/** The headers of a UI message stream response (`ai` 7's `x-vercel-ai-ui-message-stream: v1`). */
export const UI_MESSAGE_STREAM_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
};

const encoder = new TextEncoder();
const DONE = encoder.encode("data: [DONE]\n\n");

/** One SSE frame carrying a chunk. Only chunks go in `data:` lines: the client parses every one. */
export function chunkFrame(chunk: UIMessageChunk): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`);
}

/** The frame that ends a UI message stream. */
export function doneFrame(): Uint8Array {
  return DONE;
}

/**
 * A UI message stream response over an async source of chunks: each as a `data:` frame, then
 * `data: [DONE]`. Cancelling the response (the client went away) ends the source through `return`.
 */
export function uiMessageStreamResponse(source: AsyncIterable<UIMessageChunk>): Response {
  const iterator = source[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) {
        controller.enqueue(DONE);
        controller.close();
        return;
      }
      controller.enqueue(chunkFrame(next.value));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
  return new Response(body, { status: 200, headers: UI_MESSAGE_STREAM_HEADERS });
}
