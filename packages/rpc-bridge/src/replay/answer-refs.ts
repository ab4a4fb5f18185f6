import { handleRef } from "./journal-format";
import type { ReplayHandles } from "./replay-handles";

/**
 * Names the objects in one live answer a replay run journals, in the order the journal text holds
 * their handle records (the order a replay reads them back in). An object the run already holds
 * under a name is recorded by that name, at its position (the body's `k`); every other object is
 * named `"<key>#<n>"` after this call, once its answer is journaled ({@link commit}). So a replay
 * hands the program one object where the live run did, and its calls keep their keys.
 */
export class AnswerRefs {
  /** The body's `k`: position among the answer's handle records → name of an object already held. */
  readonly reused: Record<string, string> = {};
  readonly #handles: ReplayHandles;
  readonly #key: string;
  /** Objects first named by this answer (also when it returns one twice). */
  readonly #named = new Map<object, string>();
  #position = 0;
  #ordinal = 0;

  constructor(handles: ReplayHandles, key: string) {
    this.#handles = handles;
    this.#key = key;
  }

  /** Counts the next handle record the journal text holds: `value` is its object. */
  see(value: object): void {
    const position = this.#position++;
    const held = this.#handles.refOf(value) ?? this.#named.get(value);
    if (held !== undefined) {
      this.reused[position] = held;
      return;
    }
    this.#named.set(value, handleRef(this.#key, this.#ordinal++));
  }

  /** Gives the objects this answer returned first their names (once its body is encoded). */
  commit(): void {
    for (const [value, ref] of this.#named) this.#handles.nameRef(value, ref);
  }
}
