import { SseArgumentError } from "../errors";

/**
 * Protocol offsets, format version 1: `<seq>_<position>`, two 16-digit zero-padded decimal numbers.
 * `<seq>` is the stream's cursor at that position — the number of chunks before it, so the offset
 * after chunk n is `n + 1`; `<position>` is a position inside a chunk, always 0 in this version
 * (a reserved field that keeps the format open to sub-chunk positions). Fixed width makes the
 * lexicographic order of offsets their order in the stream; `0000000000000000_0000000000000000`
 * is the start of every stream.
 */
const OFFSET = /^(\d{16})_(\d{16})$/;
const WIDTH = 16;
const ZERO_POSITION = "0".repeat(WIDTH);

/**
 * The protocol offset of a seq position (the position before chunk `seq`).
 * @throws {SseArgumentError} `sse/invalid-argument` when `seq` is not a non-negative safe integer.
 */
export function formatOffset(seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 0) {
    throw new SseArgumentError(`An offset's seq is an integer ≥ 0; got ${String(seq)}.`);
  }
  return `${String(seq).padStart(WIDTH, "0")}_${ZERO_POSITION}`;
}

/** What an `offset` value asks for. */
export type SseOffsetRequest =
  | { kind: "seq"; seq: number }
  | { kind: "now" }
  | { kind: "invalid"; reason: string };

/**
 * Reads an offset value: `-1` (the start), `now` (the tail) or an offset this server minted.
 * Anything else — another server's offsets, stray characters, a non-zero position — is invalid.
 */
export function parseOffset(value: string): SseOffsetRequest {
  if (typeof value !== "string") {
    return { kind: "invalid", reason: `An offset is a string; got ${typeof value}.` };
  }
  if (value === "-1") return { kind: "seq", seq: 0 };
  if (value === "now") return { kind: "now" };
  const match = OFFSET.exec(value);
  if (match === null) {
    return {
      kind: "invalid",
      reason: `"${value}" is not an offset; use -1, now, or a Stream-Next-Offset value.`,
    };
  }
  if (match[2] !== ZERO_POSITION) {
    return {
      kind: "invalid",
      reason: `Offset "${value}" names a position inside a chunk, which this server never issues.`,
    };
  }
  const seq = Number(match[1]);
  if (!Number.isSafeInteger(seq))
    return { kind: "invalid", reason: `Offset "${value}" is out of range.` };
  return { kind: "seq", seq };
}
