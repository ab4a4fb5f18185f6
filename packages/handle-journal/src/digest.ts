import { encode, type JournalEncodeOptions } from "./encode";
import { JournalError } from "./errors";

function hex8(n: number): string {
  return (n >>> 0).toString(16).padStart(8, "0");
}

/**
 * A 64-bit, non-cryptographic digest of a text (two independent 32-bit multiply-xorshift lanes
 * over its UTF-16 code units), as 16 lowercase hex digits. Digest format 1: it is persisted, so it
 * never changes under the same name. Used to notice a replayed call whose arguments changed; it is
 * not a defence against someone crafting collisions.
 * @throws JournalError `journal/invalid-argument` when `text` is not a string.
 */
export function digestText(text: string): string {
  if (typeof text !== "string") {
    throw new JournalError(
      "journal/invalid-argument",
      `digestText takes codec text (a string); got ${typeof text}.`,
    );
  }
  let h1 = 0xdeadbeef ^ text.length;
  let h2 = 0x41c6ce57 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return hex8(h2) + hex8(h1);
}

/**
 * Encodes a call's arguments and digests the encoding: the `argsDigest` a journal entry records
 * and a replay compares. Returns the encoded text too, so a caller that needs both encodes once.
 * @throws CodecError as {@link encode} (default root label `"args"`).
 */
export function digestArgs(
  args: readonly unknown[],
  options?: JournalEncodeOptions,
): { text: string; digest: string } {
  const text = encode(args, { path: "args", ...options });
  return { text, digest: digestText(text) };
}
