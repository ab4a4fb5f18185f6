import { fromErrorRecord, isErrorRecord } from "@durablekit/handle-journal";
import { type CallState, callLabel } from "./call-state";
import { BridgeError } from "./errors";
import type { HandleTable } from "./handle-table";
import type { ArgumentReader } from "./values";

/**
 * Host AbortControllers mirroring the AbortSignals programs passed as arguments, by the program's
 * signal id. A mirror lives as long as the call it was passed to; the program's `abort(id)`
 * aborts every live mirror of that signal.
 */
export class SignalMirrors {
  readonly #byId = new Map<number, AbortController[]>();

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

/**
 * Resolves what the isolate passed back in one call's arguments: handle ids into the targets and
 * functions they name, signal records into mirrored AbortSignals, and callbacks into functions
 * that throw `bridge/callback-expired` once the call returned. What it creates is recorded on the
 * call, for {@link releaseArguments}.
 */
export function argumentReader(
  call: CallState,
  table: HandleTable,
  mirrors: SignalMirrors,
): ArgumentReader {
  return {
    handle: (id: unknown, path: string): unknown => {
      const entry = typeof id === "number" ? table.get(id) : undefined;
      if (!entry || entry.kind === "module") {
        throw new BridgeError(
          "bridge/handle-disposed",
          `The object passed at ${path} was disposed or belongs to another run.`,
          { path },
        );
      }
      return entry.kind === "target" ? entry.target : entry.fn;
    },
    signal: (id: unknown, aborted: boolean, reason: unknown): AbortSignal => {
      const controller = new AbortController();
      if (aborted) {
        controller.abort(isErrorRecord(reason) ? fromErrorRecord(reason) : undefined);
      } else if (typeof id === "number") {
        mirrors.add(id, controller);
        call.signals ??= [];
        call.signals.push([id, controller]);
      }
      return controller.signal;
    },
    callback: (stub: (...args: unknown[]) => unknown) => {
      call.callbacks ??= [];
      call.callbacks.push(stub);
      return (...args: unknown[]): unknown => {
        if (call.done) {
          throw new BridgeError(
            "bridge/callback-expired",
            `A callback passed to ${callLabel(call)} (call ${call.key}) was used after that call returned; a callback is valid only during the call it is passed to. Use it before returning, or return an object the program can call instead.`,
          );
        }
        return stub(...args);
      };
    },
  };
}

/** A call ended: its callbacks' stubs are disposed and its mirrored signals dropped. */
export function releaseArguments(call: CallState, mirrors: SignalMirrors): void {
  if (call.callbacks) {
    for (const stub of call.callbacks) {
      try {
        (stub as { [Symbol.dispose]?: () => void })[Symbol.dispose]?.();
      } catch {
        // The isolate may already be gone.
      }
    }
  }
  if (call.signals) {
    for (const [id, controller] of call.signals) mirrors.remove(id, controller);
  }
}
