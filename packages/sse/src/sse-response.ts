import { isWellFormedName } from "@durablekit/compose";
import type { StreamEncoding, StreamGoneReason } from "@durablekit/streams";
import { SseArgumentError } from "./errors";
import { base64, chunkFrame, eventFrame, HEARTBEAT_FRAME, utf8 } from "./frames";
import { resumeFrom } from "./resume";
import type { SseSource, SseSourceStatus } from "./source";

/** Options of {@link sseResponse}. */
export interface SseResponseOptions {
  /**
   * The client's request: its `Last-Event-ID` header and `?from=N` choose the start, and its
   * `signal` (a disconnect) ends the tail.
   */
  request?: Request;
  /** Explicit first seq (inclusive); wins over the request's resume hints. */
  from?: number;
  /** Ends the response (quietly, without a control frame) when it aborts. */
  signal?: AbortSignal;
  /** Most chunks per replayed batch (one enqueue each). Default 100. */
  batchSize?: number;
  /** Interval of `: heartbeat` comments while the response is open, in ms; 0 disables. Default 30000. */
  heartbeatMs?: number;
  /**
   * How long a subscriber who arrives before the stream exists waits for it, in ms, instead of an
   * immediate `404` (checked every 100 ms; a disconnect ends the wait). With this option present,
   * `sseResponse` returns a `Promise<Response>`. Without it (the default) a missing stream answers
   * `404` at once.
   */
  waitForStreamMs?: number;
  /** Lets pages of other origins read the response (an `EventSource` on another origin). */
  cors?: SseCorsOptions;
}

/** The `cors` option of {@link sseResponse}. */
export interface SseCorsOptions {
  /**
   * `"*"` for any origin, or the exact origins (`https://app.example`, no path or trailing slash)
   * whose pages may read the response; a listed request `Origin` is echoed, with `Vary: Origin`.
   */
  origin: "*" | readonly string[];
}

/** How often a waiting subscriber looks for the stream (`waitForStreamMs`). */
const STREAM_WAIT_POLL_MS = 100;

/** What an `sseResponse` body frame carries as `data:` for one chunk: always one line of JSON. */
function chunkData(encoding: StreamEncoding, chunk: unknown): string {
  if (encoding === "json") return JSON.stringify(chunk);
  if (encoding === "text") return JSON.stringify(chunk as string);
  return JSON.stringify(base64(chunk as Uint8Array));
}

/**
 * A guarded writer over a stream controller: once the body is cancelled (or closed), every write is
 * a no-op, so a heartbeat or a batch racing a disconnect never throws.
 */
class FrameSink {
  #open = true;
  readonly #controller: ReadableStreamDefaultController<Uint8Array>;

  constructor(controller: ReadableStreamDefaultController<Uint8Array>) {
    this.#controller = controller;
  }

  write(text: string): void {
    if (!this.#open) return;
    try {
      this.#controller.enqueue(utf8(text));
    } catch {
      this.#open = false;
    }
  }

  /** Marks the sink closed; closes the body unless the consumer already cancelled it. */
  close(cancelled = false): void {
    if (!this.#open) return;
    this.#open = false;
    if (cancelled) return;
    try {
      this.#controller.close();
    } catch {
      // Already errored or closed by the runtime.
    }
  }
}

/** The `cors` option, checked: `"*"` or a list of exact origins (lower-cased for comparison). */
function checkCors(cors: unknown): SseCorsOptions | undefined {
  if (cors === undefined) return undefined;
  const origin = (cors as { origin?: unknown } | null)?.origin;
  if (origin === "*") return { origin };
  if (Array.isArray(origin) && origin.every(isExactOrigin)) {
    return { origin: origin.map((item: string) => item.toLowerCase()) };
  }
  throw new SseArgumentError(
    `cors must be { origin: "*" } or { origin: ["https://app.example", …] } (exact origins: scheme, host and port, no path or trailing slash); got ${JSON.stringify(cors)}.`,
  );
}

function isExactOrigin(value: unknown): value is string {
  if (typeof value !== "string") return false;
  try {
    return new URL(value).origin === value.toLowerCase();
  } catch {
    return false;
  }
}

/** The CORS headers of one response: who may read it, and that the answer varies by `Origin`. */
function corsHeaders(cors: SseCorsOptions | undefined, request: Request | undefined): HeadersInit {
  if (cors === undefined) return {};
  if (cors.origin === "*") return { "access-control-allow-origin": "*" };
  const origin = request?.headers.get("origin")?.toLowerCase();
  if (origin !== undefined && cors.origin.includes(origin)) {
    return { "access-control-allow-origin": origin, vary: "Origin" };
  }
  return { vary: "Origin" };
}

/**
 * Resolves true once `streamId` exists, false when `waitMs` passes first or `signal` aborts.
 * Polls the stream's status: a stream is created by a write of this object, and a read costs one
 * indexed row lookup.
 */
async function waitForStream(
  streams: SseSource,
  streamId: string,
  waitMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  while (streams.status(streamId) === null) {
    const left = deadline - Date.now();
    if (left <= 0 || signal.aborted) return false;
    await new Promise<void>((resume) => {
      const timer = setTimeout(done, Math.min(STREAM_WAIT_POLL_MS, left));
      signal.addEventListener("abort", done, { once: true });
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resume();
      }
    });
  }
  return true;
}

/**
 * Serves one stream of a `Streams` log (or of another {@link SseSource}, such as a run's events,
 * `tasks.events`) as Server-Sent Events: replay from the resume point, then
 * tail until the stream settles.
 *
 * - `200` with `content-type: text/event-stream; charset=utf-8` and `cache-control: no-store`; a
 *   missing stream answers `404` with the text body `Stream "<id>" does not exist` — at once, or,
 *   with `waitForStreamMs`, when the stream has not appeared within that time (the response is
 *   then a `Promise<Response>`, and a stream created meanwhile is served as usual).
 * - Each chunk is `id: <seq>` and one `data:` line: the JSON value for a `json` stream, a JSON
 *   string for a `text` stream, a JSON string of the base64 bytes for a `binary` one. A replayed
 *   or live batch is written with one enqueue.
 * - `event: up-to-date` (`data: {}`) once, when the reader first reaches the stored tail; at the
 *   end `event: done` (`data: {}`) for a completed stream, `event: error` with `{"reason": …}` for
 *   an errored one, and `event: error` with `{"reason":"deleted","gone":true}` (or `"expired"`)
 *   for a stream deleted or expired under the reader; `: heartbeat` comments every `heartbeatMs`.
 * - The start is `from`, else `Last-Event-ID` + 1, else `?from=N`, else 0 (see {@link resumeFrom}).
 *   A `Last-Event-ID` at or beyond the stream's cursor names no event of this stream (a previous
 *   incarnation under the same id, or a forged id): the response starts again from 0.
 * - A stream id streams refuses (empty, over 256 characters, a lone surrogate) answers `400` with
 *   the JSON body `{"error":{"code":"sse/invalid-argument","message":…}}`.
 * - With `cors`, every answer (200, 400, 404) carries `Access-Control-Allow-Origin` for an allowed
 *   origin (`*`, or the request's `Origin` when listed, with `Vary: Origin`). A preflight (`OPTIONS`)
 *   is the route's to answer.
 * - A disconnect (`request.signal`, `signal`, or the body being cancelled) ends the tail quietly;
 *   an already-aborted signal ends the body at once.
 * @throws {SseArgumentError} `sse/invalid-argument` for a malformed `streams`, `heartbeatMs`, `batchSize`, `from`, `request`, `signal`, `waitForStreamMs` or `cors` (the host's arguments, thrown at the call; a bad stream id is answered, not thrown).
 */
export function sseResponse(
  streams: SseSource,
  streamId: string,
  options: SseResponseOptions & { waitForStreamMs: number },
): Promise<Response>;
export function sseResponse(
  streams: SseSource,
  streamId: string,
  options?: SseResponseOptions & { waitForStreamMs?: undefined },
): Response;
export function sseResponse(
  streams: SseSource,
  streamId: string,
  options?: SseResponseOptions,
): Response | Promise<Response>;
export function sseResponse(
  streams: SseSource,
  streamId: string,
  options: SseResponseOptions = {},
): Response | Promise<Response> {
  if (
    streams === null ||
    typeof streams !== "object" ||
    typeof streams.status !== "function" ||
    typeof streams.readBatches !== "function"
  ) {
    throw new SseArgumentError(
      "sseResponse takes the log it serves as its first argument: the object's Streams, or another SseSource such as tasks.events.",
    );
  }
  if (options === null || typeof options !== "object") {
    throw new SseArgumentError(`sseResponse options must be an object; got ${String(options)}.`);
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new SseArgumentError("signal must be an AbortSignal.");
  }
  const heartbeatMs = options.heartbeatMs ?? 30_000;
  if (typeof heartbeatMs !== "number" || !Number.isFinite(heartbeatMs) || heartbeatMs < 0) {
    throw new SseArgumentError(`heartbeatMs must be a number ≥ 0; got ${heartbeatMs}.`);
  }
  const batchSize = options.batchSize;
  if (batchSize !== undefined && (!Number.isInteger(batchSize) || batchSize < 1)) {
    throw new SseArgumentError(`batchSize must be a positive integer; got ${batchSize}.`);
  }
  const waitForStreamMs = options.waitForStreamMs;
  if (
    waitForStreamMs !== undefined &&
    (typeof waitForStreamMs !== "number" ||
      !Number.isFinite(waitForStreamMs) ||
      waitForStreamMs < 0)
  ) {
    throw new SseArgumentError(`waitForStreamMs must be a number ≥ 0; got ${waitForStreamMs}.`);
  }
  const cors = checkCors(options.cors);
  // Arguments are checked (and thrown) before anything is answered.
  resumeFrom(options);
  const extraHeaders = corsHeaders(cors, options.request);
  const upstream = [options.signal, options.request?.signal].filter(
    (signal): signal is AbortSignal => signal !== undefined,
  );
  const answer = (response: Response) =>
    waitForStreamMs === undefined ? response : Promise.resolve(response);
  // The id usually comes from the client's URL: one streams refuses is the client's mistake, so it
  // is answered (400), never thrown (a host would answer 500).
  if (!isWellFormedName(streamId, 256)) {
    return answer(
      Response.json(
        {
          error: {
            code: "sse/invalid-argument",
            message:
              "A stream id is a non-empty string of at most 256 characters without lone surrogates.",
          },
        },
        { status: 400, headers: { "cache-control": "no-store", ...extraHeaders } },
      ),
    );
  }
  const notFound = () =>
    new Response(`Stream "${streamId}" does not exist`, {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8", ...extraHeaders },
    });
  const status = streams.status(streamId);
  if (status !== null || waitForStreamMs === undefined) {
    return answer(status === null ? notFound() : serve(status));
  }
  const disconnect =
    upstream.length === 0 ? new AbortController().signal : AbortSignal.any(upstream);
  return waitForStream(streams, streamId, waitForStreamMs, disconnect).then(() => {
    const appeared = streams.status(streamId);
    return appeared === null ? notFound() : serve(appeared);
  });

  function serve(status: SseSourceStatus): Response {
    const from = resumeFrom(options, status.cursor);
    const encoding = status.encoding;
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    // A listener added to an already-aborted signal never fires: check first.
    if (upstream.some((signal) => signal.aborted)) abort.abort();
    else for (const signal of upstream) signal.addEventListener("abort", onAbort, { once: true });

    let sink: FrameSink | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        const frames = new FrameSink(controller);
        sink = frames;
        if (abort.signal.aborted) {
          frames.close();
          for (const signal of upstream) signal.removeEventListener("abort", onAbort);
          return;
        }
        void pump(frames, from, encoding, abort.signal, () => {
          for (const signal of upstream) signal.removeEventListener("abort", onAbort);
        });
      },
      cancel() {
        sink?.close(true);
        abort.abort();
      },
    });
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        ...extraHeaders,
      },
    });
  }

  async function pump(
    frames: FrameSink,
    from: number,
    encoding: StreamEncoding,
    signal: AbortSignal,
    detach: () => void,
  ): Promise<void> {
    const heartbeat =
      heartbeatMs > 0 ? setInterval(() => frames.write(HEARTBEAT_FRAME), heartbeatMs) : undefined;
    try {
      let gone: StreamGoneReason | null = null;
      let live = false;
      const batches = streams.readBatches(streamId, {
        from,
        signal,
        ...(batchSize === undefined ? {} : { batchSize }),
        onUpToDate: () => {
          live = true;
          frames.write(eventFrame("up-to-date", {}));
        },
        onGone: (reason) => {
          gone = reason;
        },
      });
      for await (const batch of batches) {
        let text = "";
        for (const { seq, chunk } of batch) text += chunkFrame(seq, chunkData(encoding, chunk));
        frames.write(text);
        // Tailing, yield one macrotask before the next read: the appends that arrive meanwhile
        // commit and come back as one batch (one read, one enqueue) instead of one wake, read and
        // event each, which at fan-out starves the appends themselves. Replay does not wait.
        if (live) await new Promise<void>((resume) => setTimeout(resume, 0));
      }
      // `done` means completion only: a stream deleted or expired under the reader ends with an
      // error that says so (`gone` tells it apart from an errored stream's own reason).
      const end = gone === null ? streams.status(streamId) : null;
      frames.write(
        gone !== null
          ? eventFrame("error", { reason: gone, gone: true })
          : end?.state === "errored"
            ? eventFrame("error", { reason: end.error ?? null })
            : eventFrame("done", {}),
      );
    } catch {
      // An abort (the client went away) or a stream that vanished before the first read: the body
      // ends without a control frame, and a reconnecting client resumes from its last id.
    } finally {
      if (heartbeat !== undefined) clearInterval(heartbeat);
      detach();
      frames.close();
    }
  }
}
