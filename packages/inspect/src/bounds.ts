import { utf8ByteLength } from "@durablekit/compose";
import type { InspectTruncated } from "./shape";

/** Default of `maxValueBytes`: a value larger than this is shown truncated. */
export const DEFAULT_MAX_VALUE_BYTES = 16 * 1024;
/** Default of `maxViewBytes`: the values of one view, in total. */
export const DEFAULT_MAX_VIEW_BYTES = 256 * 1024;
/** Characters of a truncated value's JSON kept as its preview. */
const PREVIEW_CHARS = 200;

/** The JSON text of a view's value (`undefined` has none: it is left out of a view's JSON). */
function jsonOf(value: unknown): string | undefined {
  return JSON.stringify(value);
}

/**
 * The byte budget of one view: each value it shows is taken through {@link ValueBudget.take},
 * which keeps a value that fits both `maxValueBytes` and what is left of `maxViewBytes`, and
 * otherwise puts in its place an {@link InspectTruncated} record (its size, the start of its JSON,
 * and the API path of the whole value). So a view's JSON is bounded by its facts plus
 * `maxViewBytes`, whatever the object holds.
 */
export class ValueBudget {
  readonly #maxValueBytes: number;
  #left: number;

  constructor(limits: { maxValueBytes: number; maxViewBytes: number }) {
    this.#maxValueBytes = limits.maxValueBytes;
    this.#left = limits.maxViewBytes;
  }

  /** Bytes of the view's budget not yet spent. */
  get left(): number {
    return this.#left;
  }

  /** `value` if it fits, else its truncated record naming `path`, the API route of the whole. */
  take(value: unknown, path: string): unknown {
    return this.#take(value, path, false).shown;
  }

  /**
   * For a page of chunks: `value` or its truncated record as {@link take} answers, or `null` when
   * `value` is not too large to show but too large for what is left (the page ends before it, and
   * the next page shows it whole).
   */
  next(value: unknown, path: string): { shown: unknown } | null {
    const taken = this.#take(value, path, true);
    return taken.ended ? null : taken;
  }

  #take(value: unknown, path: string, paging: boolean): { shown: unknown; ended: boolean } {
    const text = jsonOf(value);
    if (text === undefined) return { shown: value, ended: false };
    const bytes = utf8ByteLength(text);
    if (bytes <= this.#maxValueBytes && bytes <= this.#left) {
      this.#left -= bytes;
      return { shown: value, ended: false };
    }
    if (paging && bytes <= this.#maxValueBytes) return { shown: undefined, ended: true };
    return { shown: this.truncated(bytes, text, path), ended: false };
  }

  /**
   * The truncated record of a value the view does not hold whole: its size, the start of `text`
   * (its JSON, or as much of it as a part read) and `path`. For a part that answers a large value
   * as its size and first characters (a task run read with `maxValueBytes`), so the view never
   * reads the rest.
   */
  truncated(bytes: number, text: string, path: string): InspectTruncated {
    this.#left = Math.max(0, this.#left - PREVIEW_CHARS - path.length);
    return { $truncated: { bytes, preview: text.slice(0, PREVIEW_CHARS), path } };
  }
}
