import type { ChatUIMessageChunk } from "./types";

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
export function chunkFrame(chunk: ChatUIMessageChunk): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`);
}

/** The frames of several chunks as text. */
export function chunkFramesText(chunks: readonly ChatUIMessageChunk[]): string {
  let text = "";
  for (const chunk of chunks) text += `data: ${JSON.stringify(chunk)}\n\n`;
  return text;
}

/** The frames of several chunks as one buffer (one encode, one enqueue for a whole batch). */
export function chunkFrames(chunks: readonly ChatUIMessageChunk[]): Uint8Array {
  return encoder.encode(chunkFramesText(chunks));
}

/** The frame that ends a UI message stream. */
export function doneFrame(): Uint8Array {
  return DONE;
}

/**
 * A UI message stream response over an async source of chunks: each as a `data:` frame, then
 * `data: [DONE]`. Cancelling the response (the client went away) ends the source through `return`
 * without waiting for it: a source parked on a live tail is not left holding the cancel.
 */
export function uiMessageStreamResponse(source: AsyncIterable<ChatUIMessageChunk>): Response {
  const iterator = source[Symbol.asyncIterator]();
  return frameResponse(
    null,
    async () => {
      const next = await iterator.next();
      return next.done ? null : chunkFrame(next.value);
    },
    () => iterator.return?.(),
  );
}

/**
 * A UI message stream response that starts with `headFrames` (frames text, sent as one buffer
 * before anything is read from `tail`), then each batch of `tail` as one buffer, then `[DONE]`; a
 * null `tail` ends after the head. `onCancel` runs when the client goes away, before the tail is
 * ended (what wakes a tail parked on a live stream). The tail is read only when the client reads on.
 */
export function uiMessageBatchResponse(
  headFrames: string,
  tail: AsyncIterable<readonly ChatUIMessageChunk[]> | null,
  onCancel: () => void,
): Response {
  const iterator = tail?.[Symbol.asyncIterator]();
  return frameResponse(
    headFrames !== "" ? encoder.encode(headFrames) : null,
    async () => {
      if (iterator === undefined) return null;
      const next = await iterator.next();
      return next.done ? null : chunkFrames(next.value);
    },
    () => {
      onCancel();
      return iterator?.return?.();
    },
  );
}

/**
 * The response of a frame source: `first` is queued before the first read; `nextFrames` is asked
 * only when the client reads on (no pull ahead); `null` ends it with `[DONE]`; an empty buffer
 * sends nothing.
 */
function frameResponse(
  first: Uint8Array | null,
  nextFrames: () => Promise<Uint8Array | null>,
  end: () => Promise<unknown> | undefined,
): Response {
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (first !== null) controller.enqueue(first);
      },
      async pull(controller) {
        const frames = await nextFrames();
        if (frames === null) {
          controller.enqueue(DONE);
          controller.close();
          return;
        }
        if (frames.byteLength > 0) controller.enqueue(frames);
      },
      cancel() {
        // Not awaited: the source may be parked until its next write; its end must not hold this.
        end()?.catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: 200, headers: UI_MESSAGE_STREAM_HEADERS });
}
