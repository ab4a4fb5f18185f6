import { createOptionChecks, isWellFormedName } from "@durablekit/compose";
import type { JournalPort } from "@durablekit/handle-journal";
import type { BridgeAccess, BridgeInterruptPolicy } from "../context";
import { BridgeError } from "../errors";
import type { BridgeEvent } from "../events";
import type { BridgeLimits } from "../limits";
import type { BridgeModuleMap } from "../modules/modules";

/** The compatibility date program isolates run with unless `compatibilityDate` says otherwise. */
export const DEFAULT_COMPATIBILITY_DATE = "2026-06-01";

/** The Worker Loader binding's surface the executor uses (`env.LOADER`). */
export interface BridgeLoader {
  load(code: WorkerLoaderWorkerCode): WorkerStub;
}

/** Options of {@link Executor}. */
export interface ExecutorOptions {
  /** The Worker Loader binding (`env.LOADER`, from `"worker_loaders": [{ "binding": "LOADER" }]`). */
  loader: BridgeLoader;
  /** What programs may import: host modules (objects of functions) and source modules (strings). */
  modules: BridgeModuleMap;
  /** Limits of every run; see {@link BridgeLimits} for the defaults. */
  limits?: Partial<BridgeLimits>;
  /** Default access of a run. Default `"read-write"`. */
  access?: BridgeAccess;
  /** Default interrupt policy. Default `"fail"`. */
  onInterrupt?: BridgeInterruptPolicy;
  /**
   * Where replay runs journal their calls. Default a `JournalStore` over the executor's `ctx` (its
   * `dk_journal_*` tables).
   */
  journal?: JournalPort;
  /**
   * Receives `bridge:call` and `bridge:execution` events, synchronously; a throwing listener is
   * reported with `console.warn` and ignored.
   */
  onEvent?: (event: BridgeEvent) => void;
  /** Clock (epoch ms) of execution records and recovery wakes. Default `Date.now`. */
  now?: () => number;
  /** Compatibility date of program isolates. Default {@link DEFAULT_COMPATIBILITY_DATE}. */
  compatibilityDate?: string;
  /** Compatibility flags of program isolates. Default none. */
  compatibilityFlags?: string[];
}

/** Longest execution id, in UTF-16 code units (see docs/composing.md, "Names"). */
export const MAX_ID_LENGTH = 256;

/** Options of one {@link Executor.execute}. */
export interface BridgeExecuteOptions {
  /**
   * The execution's id (default a random UUID); one id runs once. A non-empty string of at most 256
   * UTF-16 code units without lone surrogates.
   */
  id?: string;
  /** This run's access. */
  access?: BridgeAccess;
  /** This run's interrupt policy. */
  onInterrupt?: BridgeInterruptPolicy;
  /** Cancels the run when it aborts. */
  signal?: AbortSignal;
  /**
   * A replay run's journal, for a run that belongs to someone else's durable log (e.g. a tasks
   * step's journal). With it, `execute` with an `id` that exists re-attaches to that execution
   * instead of refusing: a running one not live in this instance is driven now, an interrupted
   * one is returned as it is, an ended one returns its record. Such an execution is not recovered
   * by the alarm: its owner re-attaches it. Only with `onInterrupt: "replay"`.
   */
  journal?: JournalPort;
}

/** Options of one {@link Executor.resume}. */
export interface BridgeResumeOptions {
  /** The journal the execution was started with, when it was given to `execute`. */
  journal?: JournalPort;
}

/**
 * An `onInterrupt` option, checked.
 * @throws BridgeError `bridge/invalid-argument`.
 */
export function checkPolicy(value: unknown): BridgeInterruptPolicy {
  return check.oneOf(value, "onInterrupt", ["fail", "restart", "replay"], "fail");
}

/**
 * A `journal` option, checked: a JournalPort.
 * @throws BridgeError `bridge/invalid-argument`.
 */
export function checkJournal(value: unknown): JournalPort | undefined {
  if (value === undefined) return undefined;
  const port = value as Partial<JournalPort> | null;
  if (
    typeof port !== "object" ||
    port === null ||
    typeof port.lookup !== "function" ||
    typeof port.record !== "function" ||
    typeof port.resolve !== "function"
  ) {
    throw invalid(
      "journal must be a JournalPort (lookup, record, resolve), such as a JournalStore from @durablekit/handle-journal.",
    );
  }
  return port as JournalPort;
}

/**
 * An `access` option, checked.
 * @throws BridgeError `bridge/invalid-argument`.
 */
export function checkAccess(value: unknown): BridgeAccess {
  return check.oneOf(value, "access", ["read", "read-write"], "read-write");
}

function invalid(message: string): BridgeError {
  return new BridgeError("bridge/invalid-argument", message);
}

/** The shared option checks (`@durablekit/compose`), failing with `bridge/invalid-argument`. */
export const check = createOptionChecks(invalid);

/**
 * The executor's options, checked (limits and modules are checked where they are resolved).
 * @throws BridgeError `bridge/invalid-argument`.
 */
export function checkExecutorOptions(options: unknown): asserts options is ExecutorOptions {
  if (typeof options !== "object" || options === null) {
    throw invalid(
      "Executor takes an options object: new Executor(ctx, { loader: env.LOADER, modules }).",
    );
  }
  const o = options as Partial<Record<keyof ExecutorOptions, unknown>>;
  if (typeof (o.loader as Partial<BridgeLoader> | undefined)?.load !== "function") {
    throw invalid('loader must be the Worker Loader binding (env.LOADER, from "worker_loaders").');
  }
  if (typeof o.modules !== "object" || o.modules === null) {
    throw invalid("modules must be an object mapping specifiers to host modules or source text.");
  }
  if (o.limits !== undefined && (typeof o.limits !== "object" || o.limits === null)) {
    throw invalid("limits must be an object of limit overrides, e.g. { maxCalls: 100 }.");
  }
  checkJournal(o.journal);
  check.callback(o.onEvent as (() => void) | undefined, "onEvent");
  check.callback(o.now as (() => number) | undefined, "now");
  if (o.compatibilityDate !== undefined && typeof o.compatibilityDate !== "string") {
    throw invalid('compatibilityDate must be a date string such as "2026-06-01".');
  }
  if (
    o.compatibilityFlags !== undefined &&
    !(
      Array.isArray(o.compatibilityFlags) &&
      o.compatibilityFlags.every((f) => typeof f === "string")
    )
  ) {
    throw invalid("compatibilityFlags must be an array of strings.");
  }
}

/**
 * One `execute` call's options, checked.
 * @throws BridgeError `bridge/invalid-argument`.
 */
export function checkExecuteOptions(options: unknown): asserts options is BridgeExecuteOptions {
  if (typeof options !== "object" || options === null) {
    throw invalid(
      "execute takes an options object as its third argument: { id?, access?, onInterrupt?, signal?, journal? }.",
    );
  }
  const { id, signal } = options as BridgeExecuteOptions;
  checkJournal((options as BridgeExecuteOptions).journal);
  if (id !== undefined && !isWellFormedName(id, MAX_ID_LENGTH)) {
    throw invalid(
      `An execution id must be a non-empty string of at most ${MAX_ID_LENGTH} UTF-16 code units without lone surrogates.`,
    );
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw invalid("signal must be an AbortSignal.");
  }
}
