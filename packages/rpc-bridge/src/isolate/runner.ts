import { WorkerEntrypoint } from "cloudflare:workers";
import type { EvaluateOptions, Outcome } from "../wire";
import { attach, type BridgeStub, end, toRecord } from "./runtime";

/**
 * The isolate's main module, bundled at build time (scripts/build-isolate.mjs; `./runtime` is
 * imported from the `__dk_runtime.js` module, not bundled in). Its `evaluate(input, bridge,
 * options)` imports the program, runs its default export and resolves to an {@link Outcome}; it
 * never rejects for a program error.
 */

/** The program module; a variable so the bundler leaves the import to the isolate. */
const PROGRAM_MODULE = "./__dk_program.js";

// ── Unhandled rejections and timer errors ─────────────────────────────────────

const unhandled = new Map<Promise<unknown>, unknown>();
addEventListener("unhandledrejection", (event) => {
  unhandled.set(event.promise, event.reason);
  event.preventDefault();
});
addEventListener("rejectionhandled", (event) => {
  unhandled.delete(event.promise);
});

// What a program throws inside a timer callback is kept (and fails the run), not lost.
const thrownInTimers: unknown[] = [];
function guard<A extends unknown[]>(callback: unknown): unknown {
  if (typeof callback !== "function") return callback;
  return function (this: unknown, ...args: A) {
    try {
      return callback.apply(this, args);
    } catch (error) {
      thrownInTimers.push(error);
    }
  };
}
type Schedule = (callback: unknown, ms?: number, ...args: unknown[]) => number;
const realSetTimeout = globalThis.setTimeout as unknown as Schedule;
const realSetInterval = globalThis.setInterval as unknown as Schedule;
const g = globalThis as unknown as Record<string, unknown>;
g.setTimeout = (callback: unknown, ms?: number, ...args: unknown[]) =>
  realSetTimeout(guard(callback), ms, ...args);
g.setInterval = (callback: unknown, ms?: number, ...args: unknown[]) =>
  realSetInterval(guard(callback), ms, ...args);

// ── Entrypoint ────────────────────────────────────────────────────────────────

export default class Runner extends WorkerEntrypoint {
  async evaluate(input: unknown, bridge: BridgeStub, options: EvaluateOptions): Promise<Outcome> {
    attach(bridge, options);
    try {
      const program = (await import(PROGRAM_MODULE)) as { default?: unknown };
      if (typeof program.default !== "function") {
        return {
          kind: "threw",
          record: {
            $error: {
              name: "TypeError",
              message:
                "The program's default export must be a function: export default async function (input) { … }.",
            },
          },
        };
      }
      const value: unknown = await program.default(input);
      // One macrotask turn: a rejection left unhandled just before return is reported by then.
      await new Promise((resolve) => realSetTimeout(resolve, 0));
      if (unhandled.size > 0) {
        return { kind: "unhandled-rejection", record: toRecord(unhandled.values().next().value) };
      }
      if (thrownInTimers.length > 0) {
        return { kind: "timer-error", record: toRecord(thrownInTimers[0]) };
      }
      return { kind: "returned", value };
    } catch (error) {
      return { kind: "threw", record: toRecord(error) };
    } finally {
      end();
    }
  }
}
