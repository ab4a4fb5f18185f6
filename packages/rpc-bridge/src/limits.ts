import { BridgeError } from "./errors";

/**
 * Bounds of one run. Every call counts, whether it is a module's exported function or a method of
 * an object a call returned; a call over a limit is refused before it runs (except
 * `maxResponseBytes`, which can only be known once it ran). Byte sizes are those of the
 * handle-journal codec's encoding (JSON; bytes count as base64); handles count as a small
 * descriptor and streams not at all.
 */
export interface BridgeLimits {
  /** Calls per run (attempt). Default 1000. */
  maxCalls: number;
  /** Calls in flight at once. Default 32. */
  maxConcurrentCalls: number;
  /** Encoded size of one call's arguments. Default 1 MiB. */
  maxRequestBytes: number;
  /** Encoded size of one call's result. Default 1 MiB. */
  maxResponseBytes: number;
  /** Encoded size of every request and response of a run together. Default 16 MiB. */
  maxTotalBytes: number;
  /** Objects and functions a run holds at once. Default 1000. */
  maxHandles: number;
  /** Each call's deadline, from its start (capped by the run's deadline). Default 30 s. */
  callTimeoutMs: number;
  /** Wall-clock time of one run attempt. Default 60 s. */
  runTimeoutMs: number;
  /** CPU time of the isolate, as the Worker Loader's `limits.cpuMs`. Default 30 s. */
  cpuMs: number;
  /** Encoded size of the program's input. Default 1 MiB. */
  maxInputBytes: number;
  /** Encoded size of the program's result. Default 1 MiB. */
  maxResultBytes: number;
  /**
   * Encoded size of a `ctx.interrupt(payload)` payload: a larger one is refused to the host code
   * with `bridge/too-large` (`limit` `maxInterruptBytes`) and the run goes on. Stored split over rows when it
   * outgrows one. Default 1 MiB.
   */
  maxInterruptBytes: number;
  /** UTF-8 size of the program's source. Default 1 MiB. */
  maxSourceBytes: number;
  /** Attempts of a `"restart"` run, the first included. Default 3. */
  maxAttempts: number;
}

const MiB = 1024 * 1024;

/** The documented defaults of every limit. */
export const DEFAULT_LIMITS: Readonly<BridgeLimits> = Object.freeze({
  maxCalls: 1000,
  maxConcurrentCalls: 32,
  maxRequestBytes: MiB,
  maxResponseBytes: MiB,
  maxTotalBytes: 16 * MiB,
  maxHandles: 1000,
  callTimeoutMs: 30_000,
  runTimeoutMs: 60_000,
  cpuMs: 30_000,
  maxInputBytes: MiB,
  maxResultBytes: MiB,
  maxInterruptBytes: MiB,
  maxSourceBytes: MiB,
  maxAttempts: 3,
});

/**
 * The defaults overridden by `overrides`, checked: every limit is a positive integer.
 * @throws BridgeError `bridge/invalid-argument` for an unknown key or a value that is not a positive integer.
 */
export function resolveLimits(
  ...overrides: Array<Partial<BridgeLimits> | undefined>
): BridgeLimits {
  const limits: BridgeLimits = { ...DEFAULT_LIMITS };
  for (const override of overrides) {
    if (override === undefined) continue;
    for (const [key, value] of Object.entries(override)) {
      if (value === undefined) continue;
      if (!Object.hasOwn(DEFAULT_LIMITS, key)) {
        throw new BridgeError(
          "bridge/invalid-argument",
          `Unknown limit "${key}"; the limits are ${Object.keys(DEFAULT_LIMITS).join(", ")}.`,
        );
      }
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
        throw new BridgeError(
          "bridge/invalid-argument",
          `Limit ${key} must be a positive integer; got ${String(value)}.`,
        );
      }
      limits[key as keyof BridgeLimits] = value;
    }
  }
  return limits;
}
