import type { Loader } from "./attempt";
import type { Access, InterruptPolicy } from "./context";
import { BridgeError } from "./errors";
import type { BridgeEvent } from "./events";
import type { Limits } from "./limits";
import type { ModuleMap } from "./modules";

/** The compatibility date program isolates run with unless `compatibilityDate` says otherwise. */
export const DEFAULT_COMPATIBILITY_DATE = "2026-06-01";

/** Options of {@link createExecutor}. */
export interface ExecutorOptions {
  /** The Worker Loader binding (`env.LOADER`, from `"worker_loaders": [{ "binding": "LOADER" }]`). */
  loader: Loader;
  /** What programs may import: host modules (objects of functions) and source modules (strings). */
  modules: ModuleMap;
  /** The Durable Object's SQLite (`ctx.storage.sql`): records executions, enables `get` and `recover`. */
  sql?: SqlStorage;
  /** Limits of every run; see {@link Limits} for the defaults. */
  limits?: Partial<Limits>;
  /** Default access of a run. Default `"read-write"`. */
  access?: Access;
  /** Default interrupt policy. Default `"fail"`. (`"replay"` comes with a later version.) */
  onInterrupt?: InterruptPolicy | "replay";
  /** Receives `bridge:call` and `bridge:execution` events. */
  onEvent?: (event: BridgeEvent) => void;
  /**
   * Asks the host to wake at `at` (epoch ms) so an execution cut off by an eviction is recovered:
   * call `executor.alarm()` from the Durable Object's `alarm()` and re-arm to `nextWakeAt()`.
   */
  armAlarm?: (at: number) => void;
  /** Compatibility date of program isolates. Default {@link DEFAULT_COMPATIBILITY_DATE}. */
  compatibilityDate?: string;
  /** Compatibility flags of program isolates. Default none. */
  compatibilityFlags?: string[];
}

/** Options of one {@link Executor.execute}. */
export interface ExecuteOptions {
  /** The execution's id (default a random UUID); one id runs once. */
  id?: string;
  /** This run's access. */
  access?: Access;
  /** This run's interrupt policy. */
  onInterrupt?: InterruptPolicy | "replay";
  /** Cancels the run when it aborts. */
  signal?: AbortSignal;
}

/**
 * An `onInterrupt` option, checked.
 * @throws BridgeError `bridge/replay-unsupported` for `"replay"`, `bridge/invalid-options` otherwise.
 */
export function checkPolicy(value: unknown): InterruptPolicy {
  if (value === "fail" || value === "restart") return value;
  if (value === "replay") {
    throw new BridgeError(
      "bridge/replay-unsupported",
      'onInterrupt "replay" is not available in this version of @durablekit/rpc-bridge; use "fail" or "restart".',
    );
  }
  throw new BridgeError(
    "bridge/invalid-options",
    `onInterrupt must be "fail" or "restart"; got ${JSON.stringify(value)}.`,
  );
}

/**
 * An `access` option, checked.
 * @throws BridgeError `bridge/invalid-options`.
 */
export function checkAccess(value: unknown): Access {
  if (value === "read" || value === "read-write") return value;
  throw new BridgeError(
    "bridge/invalid-options",
    `access must be "read" or "read-write"; got ${JSON.stringify(value)}.`,
  );
}
