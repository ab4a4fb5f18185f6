/** The retention columns of a stream row. */
export interface RetentionFields {
  ttl_ms: number | null;
  expires_at: number | null;
  touched_at: number;
}

/**
 * When a stream expires: `ttlMs` after its last activity (the later of the row's `touched_at` and
 * the newest chunk's time), capped by the absolute `expires_at`; null when it never expires.
 * `lastAppendAt` is null when the caller does not know it, which yields the lower bound stored in
 * `wake_at` (appends only ever move the true expiry later).
 */
export function expiryOf(row: RetentionFields, lastAppendAt: number | null): number | null {
  let at: number | null = null;
  if (row.ttl_ms !== null) at = Math.max(row.touched_at, lastAppendAt ?? 0) + row.ttl_ms;
  if (row.expires_at !== null) at = at === null ? row.expires_at : Math.min(at, row.expires_at);
  return at;
}

/** True when a stream with this expiry is gone at `now`. */
export function isExpired(expiry: number | null, now: number): boolean {
  return expiry !== null && expiry <= now;
}
