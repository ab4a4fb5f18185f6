import { isWellFormedName } from "@durablekit/compose";
import type { StreamEncoding, StreamGoneReason, Streams } from "@durablekit/streams";
import { SseArgumentError } from "./errors";
import { base64, chunkFrame, eventFrame, HEARTBEAT_FRAME, utf8 } from "./frames";
import { resumeFrom } from "./resume";

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
}

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

/**
 * Serves one stream of a `Streams` log as Server-Sent Events: replay from the resume point, then
 * tail until the stream settles.
 *
 * - `200` with `content-type: text/event-stream; charset=utf-8` and `cache-control: no-store`; a
 *   missing stream answers `404` with the text body `Stream "<id>" does not exist`.
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
 * - A disconnect (`request.signal`, `signal`, or the body being cancelled) ends the tail quietly;
 *   an already-aborted signal ends the body at once.
 * @throws {SseArgumentError} `sse/invalid-argument` for a malformed `streams`, `heartbeatMs`, `batchSize`, `from`, `request` or `signal` (the host's arguments; a bad stream id is answered, not thrown).
 */
export function sseResponse(
  streams: Streams,
  streamId: string,
  options: SseResponseOptions = {},
): Response {
  if (
    streams === null ||
    typeof streams !== "object" ||
    typeof streams.status !== "function" ||
    typeof streams.readBatches !== "function"
  ) {
    throw new SseArgumentError("sseResponse takes the object's Streams as its first argument.");
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
  // Arguments are checked (and thrown) before anything is answered.
  resumeFrom(options);
  // The id usually comes from the client's URL: one streams refuses is the client's mistake, so it
  // is answered (400), never thrown (a host would answer 500).
  if (!isWellFormedName(streamId, 256)) {
    return Response.json(
      {
        error: {
          code: "sse/invalid-argument",
          message:
            "A stream id is a non-empty string of at most 256 characters without lone surrogates.",
        },
      },
      { status: 400, headers: { "cache-control": "no-store" } },
    );
  }
  const status = streams.status(streamId);
  if (status === null) {
    return new Response(`Stream "${streamId}" does not exist`, {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
  const from = resumeFrom(options, status.cursor);
  const encoding = status.encoding;
  const upstream = [options.signal, options.request?.signal].filter(
    (signal): signal is AbortSignal => signal !== undefined,
  );
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
      void pump(frames);
    },
    cancel() {
      sink?.close(true);
      abort.abort();
    },
  });

  async function pump(frames: FrameSink): Promise<void> {
    const heartbeat =
      heartbeatMs > 0 ? setInterval(() => frames.write(HEARTBEAT_FRAME), heartbeatMs) : undefined;
    try {
      let gone: StreamGoneReason | null = null;
      let live = false;
      const batches = streams.readBatches(streamId, {
        from,
        signal: abort.signal,
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
      for (const signal of upstream) signal.removeEventListener("abort", onAbort);
      frames.close();
    }
  }

  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
    },
  });
}
