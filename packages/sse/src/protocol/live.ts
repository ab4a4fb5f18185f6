import type { StreamStatus } from "@durablekit/streams";
import { base64, protocolEvent, utf8 } from "../frames";
import { responseCursor } from "./cursor";
import { H, isJsonMode, isTextCompatible } from "./headers";
import { jsonArray } from "./json-mode";
import { formatOffset } from "./offsets";
import { baseHeaders } from "./responses";
import { readSlice, type Slice } from "./slice";
import type { ReadContext } from "./types";

/** How the `data` events of one connection carry the stream's content. */
type Payload = (slice: Slice) => string;

function payloadOf(status: StreamStatus): Payload {
  if (isJsonMode(status.contentType)) return (slice) => jsonArray(slice.messages);
  if (!isTextCompatible(status.contentType)) return (slice) => base64(slice.bytes);
  // One decoder per connection, so a UTF-8 sequence split across two appends decodes whole.
  const decoder = new TextDecoder();
  return (slice) => decoder.decode(slice.bytes, { stream: true });
}

/**
 * SSE mode (§5.8): every read is an `event: data` (a JSON array in JSON mode, base64 for binary
 * content types, text otherwise) followed by an `event: control` with `streamNextOffset`, and
 * `streamCursor` + `upToDate` while the stream is open or `streamClosed` once the reader is at the
 * end of a closed stream, after which the server closes the connection. While caught up it waits
 * for appends, sending a keep-alive control event every long-poll timeout, and it closes the
 * connection after `sseConnectionMs` so the client reconnects (from its last offset).
 */
export function handleSse(
  ctx: ReadContext,
  request: Request,
  status: StreamStatus,
  start: number,
  clientCursor: string | null,
): Response {
  const streamId = status.streamId;
  const base64 = !isTextCompatible(status.contentType);
  const headers = baseHeaders({ "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  if (base64) headers.set(H.sseEncoding, "base64");
  const payload = payloadOf(status);
  const abort = new AbortController();
  const onAbort = () => abort.abort();
  if (request.signal.aborted) abort.abort();
  else request.signal.addEventListener("abort", onAbort, { once: true });
  let open = true;

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        if (!open) return;
        try {
          controller.enqueue(utf8(text));
        } catch {
          open = false;
        }
      };
      const control = (fields: Record<string, unknown>) =>
        write(protocolEvent("control", JSON.stringify(fields)));
      const cursor = () => responseCursor(clientCursor, ctx.now(), ctx.cursorIntervalMs);

      const run = async () => {
        const deadline = ctx.now() + ctx.sseConnectionMs;
        let next = start;
        let first = true;
        // A read made right after a wake (see LiveTails), to send before reading again.
        let woken: Slice | null = null;
        while (open && !abort.signal.aborted) {
          let slice: Slice;
          if (woken !== null) {
            slice = woken;
            woken = null;
          } else {
            try {
              slice = readSlice(ctx.streams, status, next, ctx.maxReadBytes);
            } catch {
              return; // The stream was deleted: end the connection.
            }
          }
          const closedAtTail = slice.state !== "streaming" && slice.next === slice.cursor;
          next = slice.next;
          if (slice.count > 0 || first || closedAtTail) {
            first = false;
            // The data event and its control event go out in one write: a client reading up to
            // the control event never sees one without the other.
            const data = slice.count > 0 ? protocolEvent("data", payload(slice)) : "";
            const fields = closedAtTail
              ? { streamNextOffset: formatOffset(next), streamClosed: true, upToDate: true }
              : {
                  streamNextOffset: formatOffset(next),
                  streamCursor: cursor(),
                  ...(slice.upToDate ? { upToDate: true } : {}),
                };
            write(data + protocolEvent("control", JSON.stringify(fields)));
          }
          if (closedAtTail) return;
          if (!slice.upToDate) continue;
          const remaining = deadline - ctx.now();
          if (remaining <= 0) return;
          // Readers parked at this offset share one wait; a wake yields once, so the appends
          // queued behind it commit first and one read (shared by readers at this offset) and one
          // event carry them all.
          const outcome = await ctx.tails.next(
            status,
            next,
            ctx.maxReadBytes,
            Math.min(ctx.longPollTimeoutMs, remaining),
            abort.signal,
          );
          if (outcome.kind === "aborted" || outcome.kind === "gone") return;
          if (outcome.kind === "read") {
            woken = outcome.slice;
            continue;
          }
          if (ctx.now() >= deadline) return;
          ctx.streams.touch(streamId);
          control({
            streamNextOffset: formatOffset(next),
            streamCursor: cursor(),
            upToDate: true,
          });
        }
      };
      void run()
        .catch(() => {
          // A storage failure mid-stream: end the connection; the client resumes from its offset.
        })
        .finally(() => {
          request.signal.removeEventListener("abort", onAbort);
          if (open) {
            open = false;
            try {
              controller.close();
            } catch {
              // Already closed or errored.
            }
          }
        });
    },
    cancel() {
      open = false;
      abort.abort();
    },
  });
  return new Response(body, { status: 200, headers });
}
