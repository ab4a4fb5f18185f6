/** Start of the cursor clock: 2024-10-09T00:00:00Z, as the protocol suggests. */
const CURSOR_EPOCH_MS = Date.UTC(2024, 9, 9);
const MAX_JITTER_SECONDS = 3600;

/**
 * The `Stream-Cursor` of a live response (protocol §10.1): the number of `intervalMs`
 * intervals since the cursor epoch, or — when the client echoed a cursor at or past that — the
 * client's cursor plus a random jitter of 1–3600 seconds' worth of intervals (at least one), so a
 * cursor never repeats and CDN caches keyed by it cannot loop.
 */
export function responseCursor(
  clientCursor: string | null,
  now: number,
  intervalMs: number,
  random: () => number = Math.random,
): string {
  const current = Math.floor((now - CURSOR_EPOCH_MS) / intervalMs);
  if (clientCursor === null || !/^\d+$/.test(clientCursor)) return String(current);
  const echoed = Number(clientCursor);
  if (!Number.isSafeInteger(echoed) || echoed < current) return String(current);
  const jitterSeconds = 1 + Math.floor(random() * MAX_JITTER_SECONDS);
  return String(echoed + Math.max(1, Math.ceil((jitterSeconds * 1000) / intervalMs)));
}
