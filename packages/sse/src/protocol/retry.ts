/**
 * How long an outbox row that failed `failures` times waits before its next try (a fork's release,
 * a notice to the subscription hub): 1 s, doubling per failure, at most 5 minutes.
 */
export function outboxRetryDelay(failures: number): number {
  return Math.min(300_000, 1_000 * 2 ** (failures - 1));
}
