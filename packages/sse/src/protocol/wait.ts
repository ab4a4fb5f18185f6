import { isStreamsError } from "@durablekit/streams";
import type { ProtocolLog } from "./log";

/** How a wait for new data ended. */
export type WaitOutcome = "data" | "ended" | "timeout" | "aborted";

const TIMEOUT = Symbol("timeout");

/**
 * Waits until chunk `from` exists, the stream settles or goes away (`ended`), `timeoutMs` passes, or
 * `signal` aborts. Built on `readBatches`, so it parks on the stream's in-isolate wake-up and
 * holds no timer beyond its own deadline.
 */
export async function waitForData(
  streams: ProtocolLog,
  streamId: string,
  from: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<WaitOutcome> {
  if (signal?.aborted) return "aborted";
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(TIMEOUT), Math.max(0, timeoutMs));
  const onAbort = () => controller.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  const batches = streams.readBatches(streamId, { from, batchSize: 1, signal: controller.signal });
  try {
    const first = await batches.next();
    return first.done ? "ended" : "data";
  } catch (error) {
    if (controller.signal.aborted)
      return controller.signal.reason === TIMEOUT ? "timeout" : "aborted";
    if (isStreamsError(error, "streams/not-found")) return "ended";
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    await batches.return(undefined);
  }
}
