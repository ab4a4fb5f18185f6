import type { InspectEvent } from "../events";
import type { ApiAnswer } from "./api";

/** Options of {@link liveResponse}. */
export interface LiveOptions {
  /** The API path the feed shows, for its events. */
  view: string;
  /**
   * Resolves when what the view shows may have changed (a run's next event): the view is read
   * then, and at the latest every {@link QUIET_READ_MS}, instead of every `intervalMs`. Null: read
   * on the timer.
   */
  changes: ((signal: AbortSignal) => Promise<void>) | null;
  intervalMs: number;
  maxMs: number;
  signal: AbortSignal;
  headers: Headers;
  emit: (event: InspectEvent) => void;
}

const encoder = new TextEncoder();

/** How long a feed that waits on changes goes without a read (and a comment to the client). */
export const QUIET_READ_MS = 15_000;
const HEARTBEAT = encoder.encode(":\n\n");

/**
 * A view kept live over Server-Sent Events: the view is read at once and every `intervalMs` (a
 * view with `changes`, a run's, when it changed, at least `intervalMs` apart), and
 * sent as `event: view` whenever its JSON changed (`data:` one line of JSON with `status` and
 * `body`), and an SSE comment (`:`) when it did not. The feed ends with `event: end` (`data: {"reason":…}`) as soon as what it shows is
 * final (`reason: "final"`: a settled run, a closed stream; the page then stops), or after `maxMs`
 * (`reason: "max-live"`: the page's EventSource reconnects, `retry: 1000`), so no connection holds
 * the object for longer. A disconnect stops the reads at once.
 */
export function liveResponse(read: () => ApiAnswer, options: LiveOptions): Response {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let abortWaits = () => {};
  let last = "";
  let reads = 0;
  let stopped = false;
  const started = Date.now();
  const stop = (reason: "final" | "max-live" | "disconnected") => {
    if (stopped) return;
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    abortWaits();
    options.emit({ type: "inspect:live:ended", view: options.view, reason, reads });
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const end = (reason: "final" | "max-live") => {
        controller.enqueue(encoder.encode(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`));
        controller.close();
        stop(reason);
      };
      const tick = () => {
        if (stopped) return;
        if (Date.now() - started >= options.maxMs) return end("max-live");
        const answer = read();
        reads += 1;
        const text = JSON.stringify({ status: answer.status, body: answer.body });
        const changed = text !== last;
        options.emit({ type: "inspect:live:read", view: options.view, changed });
        if (changed) {
          last = text;
          controller.enqueue(encoder.encode(`event: view\ndata: ${text}\n\n`));
        } else {
          // A comment line: the page ignores it, and writing it is how a client that went away
          // is noticed (the write fails and the runtime cancels this body), so reads stop.
          controller.enqueue(HEARTBEAT);
        }
        // What it shows can no longer change: reading it again would cost reads for nothing.
        if (answer.final) return end("final");
        if (options.changes === null) {
          timer = setTimeout(tick, options.intervalMs);
          return;
        }
        // Read again when it changes (at least `intervalMs` after this read, so a burst of events
        // is one read), or after a quiet while; the wait ends with the feed.
        const waited = new AbortController();
        const left = options.maxMs - (Date.now() - started);
        const quiet = setTimeout(() => waited.abort(), Math.max(0, Math.min(QUIET_READ_MS, left)));
        const readAt = Date.now() + options.intervalMs;
        abortWaits = () => waited.abort();
        options
          .changes(AbortSignal.any([waited.signal, options.signal]))
          .catch(() => {})
          .finally(() => {
            clearTimeout(quiet);
            waited.abort();
            if (!stopped) timer = setTimeout(tick, Math.max(0, readAt - Date.now()));
          });
      };
      controller.enqueue(encoder.encode("retry: 1000\n\n"));
      if (options.signal.aborted) {
        stop("disconnected");
        controller.close();
        return;
      }
      options.signal.addEventListener("abort", () => {
        if (stopped) return;
        stop("disconnected");
        try {
          controller.close();
        } catch {
          // Already closed or errored: nothing to end.
        }
      });
      tick();
    },
    cancel: () => stop("disconnected"),
  });
  return new Response(body, { headers: options.headers });
}
