import type { ApiAnswer } from "./api";

/** Options of {@link liveResponse}. */
export interface LiveOptions {
  intervalMs: number;
  maxMs: number;
  signal: AbortSignal;
  headers: Headers;
}

const encoder = new TextEncoder();

/**
 * A view kept live over Server-Sent Events: the view is read at once and every `intervalMs`, and
 * sent as `event: view` whenever its JSON changed (`data:` one line of JSON with `status` and
 * `body`). After `maxMs` the stream ends with `event: end`; the page's EventSource reconnects
 * (`retry: 1000`), so no connection holds the object for longer. A disconnect stops the reads.
 */
export function liveResponse(read: () => ApiAnswer, options: LiveOptions): Response {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let last = "";
  let stopped = false;
  const started = Date.now();
  const stop = () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const tick = () => {
        if (stopped) return;
        if (Date.now() - started >= options.maxMs) {
          controller.enqueue(encoder.encode("event: end\ndata: {}\n\n"));
          controller.close();
          stop();
          return;
        }
        const answer = read();
        const text = JSON.stringify(answer);
        if (text !== last) {
          last = text;
          controller.enqueue(encoder.encode(`event: view\ndata: ${text}\n\n`));
        }
        timer = setTimeout(tick, options.intervalMs);
      };
      controller.enqueue(encoder.encode("retry: 1000\n\n"));
      if (options.signal.aborted) {
        stop();
        controller.close();
        return;
      }
      tick();
      options.signal.addEventListener("abort", () => {
        stop();
        try {
          controller.close();
        } catch {
          // Already closed or errored: nothing to end.
        }
      });
    },
    cancel: stop,
  });
  return new Response(body, { headers: options.headers });
}
