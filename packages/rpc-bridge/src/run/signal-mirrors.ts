import { fromErrorRecord, isErrorRecord } from "@durablekit/handle-journal";

/**
 * Host AbortControllers mirroring the AbortSignals programs passed as arguments, by the program's
 * signal id. A mirror lives as long as the call it was passed to; the program's `abort(id)`
 * aborts every live mirror of that signal.
 */
export class SignalMirrors {
  readonly #byId = new Map<number, AbortController[]>();

  /** How many program signals are mirrored now. */
  get size(): number {
    return this.#byId.size;
  }

  add(id: number, controller: AbortController): void {
    const list = this.#byId.get(id);
    if (list) list.push(controller);
    else this.#byId.set(id, [controller]);
  }

  remove(id: number, controller: AbortController): void {
    const list = this.#byId.get(id);
    if (!list) return;
    const rest = list.filter((c) => c !== controller);
    if (rest.length > 0) this.#byId.set(id, rest);
    else this.#byId.delete(id);
  }

  /** The program aborted signal `id`; `reason` is its error record when it had one. */
  abort(id: unknown, reason: unknown): void {
    if (typeof id !== "number") return;
    const controllers = this.#byId.get(id);
    if (!controllers) return;
    const error = isErrorRecord(reason)
      ? fromErrorRecord(reason)
      : new DOMException("The program aborted the signal.", "AbortError");
    for (const controller of controllers) controller.abort(error);
  }

  /** The run ended: every mirror aborts with `reason` and is dropped. */
  abortAll(reason: unknown): void {
    for (const controllers of this.#byId.values()) {
      for (const controller of controllers) controller.abort(reason);
    }
    this.#byId.clear();
  }
}
