import { outboxRetryDelay } from "./retry";
import type { ProtocolStore } from "./store";
import type { DurableStreamsHub, SseEvent } from "./types";

/**
 * When a notice is due if the call made right after its change does not land (a crash, a hub that
 * does not answer): the alarm's backstop, set with the notice.
 */
const BACKSTOP_MS = 2_000;

/** A `dk_sse_notices` row. */
type NoticeRow = { stream_id: string; seq: number; attempts: number };

/**
 * The outbox that tells a stream's subscription hub about changes. `mark` runs inside the
 * transaction of the change (an append, a create, a delete) and bumps the stream's notice row; once
 * the change is durable, `flush` calls the hub's `streamChanged` and removes the row only if no
 * change marked it since. A crash between the change and the call leaves the row, which the alarm
 * delivers; a failed call backs off (1 s doubling to 5 min). At most one call per object is in
 * flight: changes during it fold into the next call, so a burst of appends costs the hub one read.
 */
export class HubNotices {
  readonly #store: ProtocolStore;
  readonly #hub: () => DurableStreamsHub;
  readonly #now: () => number;
  readonly #emit: (event: SseEvent) => void;
  readonly #requestWake: (at: number) => void;
  #running: Promise<void> | null = null;
  #again = false;

  constructor(options: {
    store: ProtocolStore;
    hub: () => DurableStreamsHub;
    now: () => number;
    emit: (event: SseEvent) => void;
    requestWake: (at: number) => void;
  }) {
    this.#store = options.store;
    this.#hub = options.hub;
    this.#now = options.now;
    this.#emit = options.emit;
    this.#requestWake = options.requestWake;
  }

  /**
   * Records that `streamId` changed; call it inside the change's transaction. The notice is due at
   * the backstop (the alarm is asked for it), and `flush` right after the commit delivers it first.
   */
  mark(streamId: string): void {
    const dueAt = this.#now() + BACKSTOP_MS;
    this.#store.writer().exec(
      `INSERT INTO dk_sse_notices (stream_id, seq, due_at, attempts) VALUES (?, 1, ?, 0)
       ON CONFLICT (stream_id) DO UPDATE SET seq = seq + 1, due_at = excluded.due_at, attempts = 0`,
      streamId,
      dueAt,
    );
    this.#requestWake(dueAt);
  }

  /** The earliest notice due, or null. */
  nextWakeAt(): number | null {
    return (
      this.#store
        .reader()
        ?.exec<{ at: number | null }>("SELECT min(due_at) AS at FROM dk_sse_notices")
        .one().at ?? null
    );
  }

  /**
   * Tells the hub about the notices: every one after a change (`"all"`); from the alarm (`"due"`),
   * every one not yet tried (a crash cut its first call off) and the failed ones whose retry is due.
   * Resolves when none is left to tell (or the ones left failed and wait for their retry).
   */
  flush(which: "all" | "due"): Promise<void> {
    if (this.#running !== null) {
      this.#again = true;
      return this.#running;
    }
    const running = this.#drain(which);
    this.#running = running;
    // Cleared from outside the loop: a loop that finds nothing settles at once, before the
    // assignment above; clearing inside it would leave the settled promise in place for good.
    void running.finally(() => {
      if (this.#running === running) this.#running = null;
    });
    return running;
  }

  async #drain(which: "all" | "due"): Promise<void> {
    do {
      this.#again = false;
      const until = which === "all" ? Number.MAX_SAFE_INTEGER : this.#now();
      for (const notice of this.#due(until)) await this.#deliver(notice);
    } while (this.#again);
  }

  #due(until: number): NoticeRow[] {
    return (
      this.#store
        .reader()
        ?.exec<NoticeRow>(
          "SELECT stream_id, seq, attempts FROM dk_sse_notices WHERE attempts = 0 OR due_at <= ? ORDER BY due_at LIMIT 100",
          until,
        )
        .toArray() ?? []
    );
  }

  async #deliver(notice: NoticeRow): Promise<void> {
    try {
      await this.#hub().streamChanged(notice.stream_id);
      this.#store
        .writer()
        .exec(
          "DELETE FROM dk_sse_notices WHERE stream_id = ? AND seq = ?",
          notice.stream_id,
          notice.seq,
        );
    } catch (error) {
      const attempts = notice.attempts + 1;
      const retryAt = this.#now() + outboxRetryDelay(attempts);
      // Only if no change marked it meanwhile (that one is due now and will be told).
      this.#store
        .writer()
        .exec(
          "UPDATE dk_sse_notices SET attempts = ?, due_at = ? WHERE stream_id = ? AND seq = ?",
          attempts,
          retryAt,
          notice.stream_id,
          notice.seq,
        );
      this.#emit({
        type: "sse:notice-failed",
        streamId: notice.stream_id,
        attempts,
        retryAt,
        error,
      });
      this.#requestWake(retryAt);
    }
  }
}
