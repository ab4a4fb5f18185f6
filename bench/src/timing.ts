/**
 * Runs `fn` `count` times and returns the elapsed wall time in milliseconds. Inside local workerd
 * the clock advances during synchronous code, so in-object timing is meaningful; callers choose a
 * `count` large enough that the millisecond resolution does not matter.
 */
export function timeLoop(count: number, fn: (index: number) => void): number {
  const start = performance.now();
  for (let index = 0; index < count; index++) fn(index);
  return performance.now() - start;
}

/** Times one async call, in milliseconds. */
export async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Operations per second from a count and elapsed milliseconds (elapsed floored at 1 ms). */
export function perSecond(count: number, elapsedMs: number): number {
  return (count * 1000) / Math.max(elapsedMs, 1);
}

/** A JSON chunk of about `bytes` bytes, distinct per index. */
export function sampleChunk(index: number, bytes = 120): { i: number; text: string } {
  const head = JSON.stringify({ i: index, text: "" }).length;
  return { i: index, text: "x".repeat(Math.max(0, bytes - head)) };
}
