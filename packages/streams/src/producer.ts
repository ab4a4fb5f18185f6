import { isWellFormedName } from "@durablekit/compose";
import { StreamsArgumentError } from "./errors";

/**
 * What the stream holds for one producer: its epoch and the highest sequence number accepted in it
 * (-1 when `open` recorded the epoch and nothing has been written in it yet).
 */
export interface ProducerState {
  epoch: number;
  seq: number;
}

/** The verdict on one producer write, following the Durable Streams idempotent-producer rules. */
export type ProducerVerdict =
  | { kind: "accept" }
  | { kind: "duplicate" }
  | { kind: "fenced"; currentEpoch: number }
  | { kind: "gap"; expected: number }
  | { kind: "epoch-seq" };

/** The fence of a producer's epoch: older than the epoch the stream has seen is fenced. */
export type ProducerFence = { kind: "accept" } | { kind: "fenced"; currentEpoch: number };

/**
 * Judges a producer's `epoch` against its state (null for a producer the stream has not seen):
 * an epoch older than the one the stream holds is fenced; any other passes the fence.
 */
export function judgeProducerFence(state: ProducerState | null, epoch: number): ProducerFence {
  return state !== null && epoch < state.epoch
    ? { kind: "fenced", currentEpoch: state.epoch }
    : { kind: "accept" };
}

/**
 * Judges a write `(epoch, seq)` against the producer's state (null for a producer the stream has
 * not seen):
 * - an older epoch is fenced;
 * - a newer epoch is accepted only at seq 0 (it then becomes the producer's epoch), and so is the
 *   first write of an epoch `open` recorded (`seq` -1);
 * - in the same epoch, a seq at or below the last accepted one is a duplicate, the next one is
 *   accepted, anything beyond is a gap;
 * - a new producer starts at seq 0, in any epoch.
 */
export function judgeProducerWrite(
  state: ProducerState | null,
  epoch: number,
  seq: number,
): ProducerVerdict {
  if (state === null) return seq === 0 ? { kind: "accept" } : { kind: "gap", expected: 0 };
  const fence = judgeProducerFence(state, epoch);
  if (fence.kind === "fenced") return fence;
  if (epoch > state.epoch) return seq === 0 ? { kind: "accept" } : { kind: "epoch-seq" };
  if (seq <= state.seq) return { kind: "duplicate" };
  if (seq === state.seq + 1) return { kind: "accept" };
  // An epoch `open` recorded, not yet written in: it starts at 0 like any new epoch.
  if (state.seq < 0) return { kind: "epoch-seq" };
  return { kind: "gap", expected: state.seq + 1 };
}

/** The sequence number a producer's next write takes when the caller does not give one. */
export function nextProducerSeq(state: ProducerState | null, epoch: number): number {
  return state !== null && state.epoch === epoch ? state.seq + 1 : 0;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** Checks a producer identity (`id` a well-formed name of ≤ 256 chars, `epoch` a safe integer ≥ 0). */
export function assertProducer(producer: { id: unknown; epoch: unknown }, streamId: string): void {
  if (!isWellFormedName(producer.id, 256)) {
    throw new StreamsArgumentError(
      `A producer id must be a non-empty string of at most 256 characters without lone surrogates; got ${typeof producer.id === "string" ? JSON.stringify(producer.id) : typeof producer.id}.`,
      streamId,
    );
  }
  assertCounter(producer.epoch, "producer epoch", streamId);
}

/** Checks a non-negative safe integer (epochs and producer sequence numbers). */
export function assertCounter(
  value: unknown,
  label: string,
  streamId: string,
): asserts value is number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_SAFE) {
    throw new StreamsArgumentError(
      `A ${label} must be an integer from 0 to 2^53-1; got ${String(value)}.`,
      streamId,
    );
  }
}

/** Checks a `writerSeq` (a non-empty string). */
export function assertWriterSeq(value: unknown, streamId: string): asserts value is string {
  if (typeof value !== "string" || value.length === 0) {
    throw new StreamsArgumentError(
      `A writerSeq must be a non-empty string; got ${JSON.stringify(value)}.`,
      streamId,
    );
  }
}
