import { WorkerEntrypoint } from "cloudflare:workers";
import {
  ArrayPrototypePush,
  PromisePrototypeThen,
  promiseRace,
  ReflectApply,
  SafeMap,
  SafePromise,
  thenOf,
} from "../shared/primordials";
import type { EvaluateOptions, Outcome, ReplayOptions } from "../shared/wire";
import {
  attach,
  type BridgeStub,
  end,
  type RealTimers,
  replay,
  takeAnswered,
  toRecord,
} from "./runtime";

/**
 * The isolate's main module, bundled at build time (scripts/build-isolate.mjs; `./runtime` is
 * imported from the `__dk_runtime.js` module, not bundled in). Its `evaluate(input, bridge,
 * options)` imports the program, runs its default export and resolves to an {@link Outcome}; it
 * never rejects for a program error. In a replay run (`options.replay`) it first makes the
 * isolate deterministic (runtime's `replay`), and the attempt also ends, as `"diverged"`, when the
 * program stops repeating its recorded order of events.
 */

/** The program module; a variable so the bundler leaves the import to the isolate. */
const PROGRAM_MODULE = "./__dk_program.js";

// ── Unhandled rejections and timer errors ─────────────────────────────────────

const unhandled = new SafeMap<Promise<unknown>, unknown>();
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
      return ReflectApply(callback, this, args);
    } catch (error) {
      ArrayPrototypePush(thrownInTimers, error);
    }
  };
}
type Schedule = (callback: unknown, ms?: number, ...args: unknown[]) => number;
const realSetTimeout = globalThis.setTimeout as unknown as Schedule;
const realSetInterval = globalThis.setInterval as unknown as Schedule;
const realClearTimeout = globalThis.clearTimeout as (id: unknown) => void;
/**
 * The platform's timers for a replay run's delivery order (its macrotask turns and stall watch),
 * taken before the program is imported (so a program replacing `Response` cannot reach them).
 *
 * A turn is the read of an empty `Response` body: workerd settles it from its event loop, after
 * every queued microtask has run (a 20,000-step microtask chain finishes first), in ~20 µs; a
 * zero-delay timer takes ~1.1 ms, and a `MessageChannel` message or `scheduler.yield()` arrives
 * between microtasks, which is not a turn. test/deterministic-isolate.test.ts checks that two
 * deliveries' microtask chains never interleave.
 */
function platformTimers(): RealTimers {
  const timers: RealTimers = {
    setTimeout: (callback, ms) => realSetTimeout(callback, ms),
    // Called as the platform function, never as a method of this object (workerd checks `this`).
    clearTimeout: (id) => realClearTimeout(id),
    nextTurn: (callback) => {
      realSetTimeout(callback, 0);
    },
  };
  const EmptyBody = globalThis.Response;
  const read = EmptyBody?.prototype.arrayBuffer;
  if (typeof read !== "function") return timers;
  timers.nextTurn = (callback) => {
    thenOf(ReflectApply(read, new EmptyBody(""), []) as Promise<ArrayBuffer>, callback, callback);
  };
  return timers;
}

/** `[guard(callback), ms, ...args]`, built without the array iterator a program may replace. */
function scheduleArgs(callback: unknown, ms: number | undefined, args: unknown[]): unknown[] {
  const all: unknown[] = [guard(callback), ms];
  for (let i = 0; i < args.length; i++) all[i + 2] = args[i];
  return all;
}

const g = globalThis as unknown as Record<string, unknown>;
g.setTimeout = (callback: unknown, ms?: number, ...args: unknown[]) =>
  ReflectApply(realSetTimeout, undefined, scheduleArgs(callback, ms, args));
g.setInterval = (callback: unknown, ms?: number, ...args: unknown[]) =>
  ReflectApply(realSetInterval, undefined, scheduleArgs(callback, ms, args));

// ── Program ───────────────────────────────────────────────────────────────────

const NO_DEFAULT: Outcome = {
  kind: "threw",
  record: {
    $error: {
      name: "TypeError",
      message:
        "The program's default export must be a function: export default async function (input) { … }.",
    },
  },
};

/** Imports the program: its default export, or null when that is not a function. */
async function importProgram(): Promise<((input: unknown) => unknown) | null> {
  const program = (await import(PROGRAM_MODULE)) as { default?: unknown };
  return typeof program.default === "function"
    ? (program.default as (input: unknown) => unknown)
    : null;
}

/** How a program that returned `value` ended: a rejection left unhandled or a timer error fails it. */
async function checked(value: unknown): Promise<Outcome> {
  // One macrotask turn: a rejection left unhandled just before return is reported by then.
  await new SafePromise((resolve) => realSetTimeout(resolve, 0));
  if (unhandled.size > 0) {
    return { kind: "unhandled-rejection", record: toRecord(unhandled.values().next().value) };
  }
  if (thrownInTimers.length > 0) {
    return { kind: "timer-error", record: toRecord(thrownInTimers[0]) };
  }
  return { kind: "returned", value };
}

// ── Entrypoint ────────────────────────────────────────────────────────────────

/** Settles the running `evaluate` as halted (set while one runs; an isolate runs one). */
let halt: (() => void) | null = null;

export default class Runner extends WorkerEntrypoint {
  async evaluate(input: unknown, bridge: BridgeStub, options: EvaluateOptions): Promise<Outcome> {
    attach(bridge, options);
    // Created in this request, so `halt()` (another request) settles it in this one's context.
    const halted = new SafePromise<Outcome>((resolve) => {
      halt = () => resolve({ kind: "halted" });
    });
    try {
      if (options.replay !== undefined) {
        return reported(await promiseRace([replayed(input, options.replay), halted]));
      }
      return await promiseRace([evaluated(input), halted]);
    } catch (error) {
      const threw: Outcome = { kind: "threw", record: toRecord(error) };
      return options.replay === undefined ? threw : reported(threw);
    } finally {
      halt = null;
      end();
    }
  }

  /**
   * The host ended the attempt while the program still runs (suspended, timed out, cancelled,
   * failed): `evaluate` resolves `"halted"` at once, whatever the program still awaits or left
   * pending (timers, a call the host will never answer), so the isolate's request ends and workerd
   * stops the isolate with it; nothing of the program runs after that. A no-op when no `evaluate`
   * is running.
   */
  halt(): void {
    halt?.();
  }
}

/** A run that is not a replay run: the program imported, run and checked. */
async function evaluated(input: unknown): Promise<Outcome> {
  const main = await importProgram();
  if (main === null) return NO_DEFAULT;
  // Awaited, not returned: an async function resolved with a promise looks up its `then`, which
  // a program may have replaced.
  return await checked(await main(input));
}

/** A replay run's outcome carries the calls answered in the isolate that no invoke reported yet. */
function reported(outcome: Outcome): Outcome {
  const answered = takeAnswered();
  return answered.seqs.length === 0 ? outcome : { ...outcome, answered };
}

/**
 * A replay run's attempt: the isolate is made deterministic before the program is imported, and
 * the attempt ends as `"diverged"` when the program stops repeating its recorded order of events
 * (a stall, or a return with recorded events left).
 */
async function replayed(input: unknown, options: ReplayOptions): Promise<Outcome> {
  const isolate = replay(options, platformTimers(), (error) => {
    ArrayPrototypePush(thrownInTimers, error);
  });
  const running = (async (): Promise<Outcome> => {
    const main = await importProgram();
    if (main === null) return NO_DEFAULT;
    const value = await main(input);
    const record = isolate.finish();
    return record === null ? await checked(value) : { kind: "diverged", record };
  })();
  const diverged = PromisePrototypeThen(
    isolate.diverged,
    (record): Outcome => ({ kind: "diverged", record }),
  );
  return promiseRace([running, diverged]);
}
