import { formatOffset, parseOffset } from "../protocol/offsets";
import { type Refusal, refusal } from "./answers";
import type { AckInput } from "./requests";
import type { LinkRow, SubscriptionConfig, SubscriptionRow, SubscriptionStore } from "./store";

/** One stream of a subscription as the protocol shows it. */
export interface DurableStreamsSubscriptionStream {
  path: string;
  link_type: "explicit" | "glob";
  acked_offset: string;
  tail_offset: string;
  has_pending: boolean;
}

/** How the wakes of a subscription behave. */
export interface WakeRules {
  /** Wakes opened in a row without any acknowledgement before the subscription is dead-lettered. */
  readonly maxUnackedWakes: number;
  now(): number;
  /** Told when a subscription is dead-lettered for its unacknowledged wakes. */
  onDead(subscriptionId: string, reason: string): void;
}

/** The columns of a subscription with no wake open. */
export const NO_WAKE = {
  wake_id: null,
  snapshot: null,
  holder: null,
  lease_until: null,
  due_at: null,
} as const;

/** The offset a seq shows as: `-1` before the first append. */
export function offsetOf(seq: number): string {
  return seq < 0 ? "-1" : formatOffset(seq);
}

/** A wake id: `w_` and 24 hex digits. */
function newWakeId(): string {
  let hex = "";
  for (const byte of crypto.getRandomValues(new Uint8Array(12))) {
    hex += byte.toString(16).padStart(2, "0");
  }
  return `w_${hex}`;
}

/**
 * A subscription's wakes, as synchronous steps over the store (the hub runs each in a transaction):
 * a wake opens when a followed stream's tail passes its acknowledged seq and no wake is open; it
 * takes a new generation and a snapshot of the tails; acks move the acknowledged seqs; `done`, a
 * release or the lease's end closes it, and a new wake opens at once if work remains. A wake that
 * ends with nothing acknowledged counts toward `maxUnackedWakes`, after which the subscription is
 * dead-lettered: it keeps its links and acknowledged seqs, opens no wake, and is revived by a
 * confirming PUT.
 */
export class Wakes {
  readonly #store: SubscriptionStore;
  readonly #rules: WakeRules;

  constructor(store: SubscriptionStore, rules: WakeRules) {
    this.#store = store;
    this.#rules = rules;
  }

  /** The streams of a subscription, tails as of its open wake (else as the hub knows them now). */
  streams(
    row: SubscriptionRow,
    links = this.#store.links(row.id),
  ): DurableStreamsSubscriptionStream[] {
    const snapshot =
      row.snapshot === null ? null : new Map(JSON.parse(row.snapshot) as [string, number][]);
    return links.map((link) => {
      const tail = snapshot?.get(link.path) ?? this.#tailOf(link.path);
      return {
        path: link.path,
        link_type: link.explicit === 1 ? "explicit" : "glob",
        acked_offset: offsetOf(link.acked_seq),
        tail_offset: formatOffset(tail),
        has_pending: tail > Math.max(link.acked_seq, 0),
      };
    });
  }

  /** True when a followed stream holds data past its acknowledged seq. */
  pending(id: string): boolean {
    return this.#store.links(id).some((link) => this.#hasPending(link));
  }

  /**
   * Opens a wake when none is open, the subscription is not dead and work is pending. Its delivery
   * (the webhook POST, or the wake stream's event) is due now unless `deliver` is false (a claim
   * opens the wake it takes). Returns whether one opened.
   */
  open(row: SubscriptionRow, deliver = true): boolean {
    if (row.wake_id !== null || row.status === "dead") return false;
    const links = this.#store.links(row.id);
    if (!links.some((link) => this.#hasPending(link))) return false;
    const now = this.#rules.now();
    const unacked = row.unacked_wakes + 1;
    if (unacked > this.#rules.maxUnackedWakes) {
      const reason = `${row.unacked_wakes} wakes in a row ended without an acknowledgement.`;
      this.#store.patch(row.id, { status: "dead", dead_at: now, due_at: null, last_error: reason });
      this.#rules.onDead(row.id, reason);
      return false;
    }
    const snapshot = links.map((link) => [link.path, this.#tailOf(link.path)]);
    this.#store.patch(row.id, {
      generation: row.generation + 1,
      wake_id: newWakeId(),
      snapshot: JSON.stringify(snapshot),
      holder: null,
      lease_until: null,
      due_at: deliver ? now : null,
      attempts: 0,
      unacked_wakes: unacked,
    });
    return true;
  }

  /** Closes the open wake; opens the next one when work remains. Returns whether one opened. */
  close(id: string): boolean {
    this.#store.patch(id, { ...NO_WAKE, attempts: 0 });
    const row = this.#store.get(id);
    return row !== null && this.open(row);
  }

  /** Acknowledges the whole snapshot of the open wake (a webhook answered `{ "done": true }`). */
  ackSnapshot(row: SubscriptionRow): void {
    if (row.snapshot === null) return;
    for (const [path, seq] of JSON.parse(row.snapshot) as [string, number][]) {
      this.#store.setAcked(row.id, path, seq);
    }
    this.#store.patch(row.id, { unacked_wakes: 0 });
  }

  /**
   * Applies acks: each names a followed stream and an offset the hub issued, not behind its
   * acknowledged seq and not past its tail. Nothing is applied unless all are valid.
   */
  ack(row: SubscriptionRow, acks: readonly AckInput[]): Refusal | null {
    const moves: [string, number][] = [];
    for (const ack of acks) {
      if (!this.#store.hasLink(row.id, ack.stream)) {
        return refusal("INVALID_OFFSET", `"${ack.stream}" is not a stream of this subscription.`);
      }
      if (ack.offset === "-1") return refusal("INVALID_OFFSET", "An ack's offset is never -1.");
      const offset = parseOffset(ack.offset);
      if (offset.kind !== "seq") {
        return refusal("INVALID_OFFSET", `"${ack.offset}" is not an offset of this server.`);
      }
      const link = this.#store.links(row.id).find((item) => item.path === ack.stream) as LinkRow;
      if (offset.seq < link.acked_seq) {
        return refusal("INVALID_OFFSET", `The ack on "${ack.stream}" moves its cursor back.`);
      }
      if (offset.seq > this.#tailOf(ack.stream)) {
        return refusal("INVALID_OFFSET", `The ack on "${ack.stream}" is past the stream's tail.`);
      }
      moves.push([ack.stream, offset.seq]);
    }
    for (const [path, seq] of moves) this.#store.setAcked(row.id, path, seq);
    if (moves.length > 0) this.#store.patch(row.id, { unacked_wakes: 0 });
    return null;
  }

  /** Links a subscription's explicit streams and, for a pattern, every known matching stream. */
  linkInitial(id: string, config: SubscriptionConfig, matching: readonly string[]): void {
    for (const path of config.streams) this.#store.link(id, path, "explicit", this.#tailOf(path));
    for (const path of matching) this.#store.link(id, path, "glob", this.#tailOf(path));
  }

  #hasPending(link: LinkRow): boolean {
    return this.#tailOf(link.path) > Math.max(link.acked_seq, 0);
  }

  #tailOf(path: string): number {
    return this.#store.tail(path) ?? 0;
  }
}
