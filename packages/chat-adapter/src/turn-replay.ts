import type { StreamChunk } from "@durablekit/streams";
import type { ChatUIMessageChunk } from "./types";

/**
 * What one reader of a turn gets, in order: its `start` first, then the stored segments unpacked.
 *
 * The turn's `messageId` is durable from `startTurn` (the stream row holds it), so a reader always
 * begins with `{ type: "start", messageId }`:
 * - when nothing of the turn is stored yet, the start is given first ({@link opening}), and the
 *   first stored chunk is skipped if it is a `start` (its `messageMetadata`, if any, comes as a
 *   `message-metadata` chunk), so a reader never sees two;
 * - when chunks are stored, the first stored chunk is normally the turn's `start` and is given as
 *   stored; a turn whose first stored chunk is not a `start` gets one put first.
 */
export class TurnReplay {
  readonly #messageId: string | null;
  readonly #startGiven: boolean;
  #first = true;

  /**
   * @param messageId - the turn's message id (null when unknown: nothing is put first).
   * @param stored - whether any chunk of the turn is stored (read before the reader starts).
   */
  constructor(messageId: string | null, stored: boolean) {
    this.#messageId = messageId;
    this.#startGiven = !stored && messageId !== null;
  }

  /** What the reader gets before any stored chunk. */
  opening(): ChatUIMessageChunk[] {
    return this.#startGiven ? [{ type: "start", messageId: this.#messageId }] : [];
  }

  /**
   * Stored segments given as their stored JSON text (`readPage` with `decode: false`) as the
   * frames the reader gets: `data: <chunk JSON>\n\n` each, the chunk's JSON cut out of the
   * segment's text as it is (the text `JSON.stringify` made, which is what re-encoding a parsed
   * chunk gives), so only the turn's first chunk is parsed.
   */
  frames(rows: readonly StreamChunk<unknown>[]): string {
    let text = "";
    for (const { chunk } of rows) {
      const segment = chunk as string;
      forEachArrayItem(segment, (start, end) => {
        const item = segment.slice(start, end);
        if (this.#first) {
          const parsed = JSON.parse(item) as ChatUIMessageChunk;
          const out = this.take([{ seq: 0, chunk: [parsed] }], []); // ends #first
          // Given as stored unless the first chunk is replaced or preceded.
          if (out.length === 1 && out[0] === parsed) text += `data: ${item}\n\n`;
          else for (const given of out) text += `data: ${JSON.stringify(given)}\n\n`;
          return;
        }
        text += `data: ${item}\n\n`;
      });
    }
    return text;
  }

  /** Stored segments (each a JSON array of chunks) as the reader gets them, appended to `out`. */
  take(rows: readonly StreamChunk<unknown>[], out: ChatUIMessageChunk[]): ChatUIMessageChunk[] {
    for (const { chunk } of rows) {
      for (const item of chunk as ChatUIMessageChunk[]) {
        if (this.#first) {
          this.#first = false;
          if (this.#startGiven && item.type === "start") {
            if (item.messageMetadata !== undefined) {
              out.push({ type: "message-metadata", messageMetadata: item.messageMetadata });
            }
            continue;
          }
          if (!this.#startGiven && item.type !== "start" && this.#messageId !== null) {
            out.push({ type: "start", messageId: this.#messageId });
          }
        }
        out.push(item);
      }
    }
    return out;
  }
}

/**
 * Calls `each(start, end)` with the bounds of every top-level item of a JSON array's text, in
 * order, without parsing it: commas split items only outside strings and nested values. A string
 * is skipped with `indexOf` to its closing quote (one not escaped by an odd run of backslashes),
 * so the text of a chunk's strings is never walked character by character.
 */
export function forEachArrayItem(text: string, each: (start: number, end: number) => void): void {
  let depth = 0;
  let start = 1;
  let empty = true;
  const last = text.length - 1; // the closing bracket
  let i = 1;
  while (i < last) {
    const code = text.charCodeAt(i);
    empty = false;
    if (code === 0x22 /* " */) {
      let close = text.indexOf('"', i + 1);
      for (;;) {
        let backslashes = 0;
        while (text.charCodeAt(close - 1 - backslashes) === 0x5c /* \\ */) backslashes++;
        if (backslashes % 2 === 0) break;
        close = text.indexOf('"', close + 1);
      }
      i = close + 1;
      continue;
    }
    if (code === 0x7b /* { */ || code === 0x5b /* [ */) depth++;
    else if (code === 0x7d /* } */ || code === 0x5d /* ] */) depth--;
    else if (code === 0x2c /* , */ && depth === 0) {
      each(start, i);
      start = i + 1;
    }
    i++;
  }
  if (!empty) each(start, last);
}
