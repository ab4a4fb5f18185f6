import { decode, type JournalEntry, type JournalPort } from "@durablekit/handle-journal";
import { fromJournalFailure } from "../errors";
import type { BridgeLimits } from "../limits";
import type { ModuleRegistry } from "../modules/module-registry";
import {
  type BridgeReplayFingerprint,
  fingerprintChange,
  fingerprintOf,
} from "../replay/fingerprint";
import type { BridgeExecutionError } from "./execution";
import { errorBody, fingerprintError, thrownBody } from "./execution-errors";
import type { RunningExecution } from "./execution-store";

/**
 * What becomes of an execution no attempt of this instance runs (recovery, re-attach, resume): it
 * fails with `error`, or runs again from the top as a new attempt, with its program and input
 * loaded again and, for a replay run, the journal it replays from, read once.
 */
export type RecoveryPlan =
  | { action: "fail"; error: BridgeExecutionError }
  | {
      action: "restart";
      modules: Record<string, string>;
      input: unknown;
      /** A replay run's journal, loaded once for the attempt (`[]` for any other run). */
      entries: readonly JournalEntry[];
    };

/** What the planner reads: the modules, the limits and the compatibility settings runs get. */
export interface RecoveryPlannerOptions {
  registry: ModuleRegistry;
  limits: BridgeLimits;
  compatibilityDate: string;
  compatibilityFlags: string[];
}

/**
 * Decides whether an execution may run again, and with what: after its object restarted under it
 * (`planRestart`, `planReplay`), when a run is resumed (`reload`), and when an attempt of a
 * `"restart"` run was interrupted (`restartRefusal`). Reads only; the `Executor` carries out a plan.
 */
export class RecoveryPlanner {
  readonly #registry: ModuleRegistry;
  readonly #limits: BridgeLimits;
  readonly #compatibilityDate: string;
  readonly #compatibilityFlags: string[];

  constructor(options: RecoveryPlannerOptions) {
    this.#registry = options.registry;
    this.#limits = options.limits;
    this.#compatibilityDate = options.compatibilityDate;
    this.#compatibilityFlags = options.compatibilityFlags;
  }

  /**
   * Decides what becomes of an execution whose Durable Object restarted under it: an
   * `onInterrupt: "fail"` one fails with `bridge/interrupted`; a `"restart"` one runs again from the
   * top unless a call marked unsafeToRepeat ran, `maxAttempts` is used up, or its stored program or
   * input no longer loads (a module it imports was removed), when it fails saying which.
   */
  planRestart(row: RunningExecution): RecoveryPlan {
    switch (row.onInterrupt) {
      case "fail":
        return {
          action: "fail",
          error: errorBody(
            "bridge/interrupted",
            "The run was interrupted when its Durable Object restarted (onInterrupt: fail).",
          ),
        };
      case "restart":
        break;
      default:
        return {
          action: "fail",
          error: errorBody(
            "bridge/interrupted",
            `The run was recorded with an unknown onInterrupt policy ${JSON.stringify(row.onInterrupt)}.`,
          ),
        };
    }
    const refusal = this.restartRefusal(row.unsafeCall, row.attempt);
    if (refusal) return { action: "fail", error: refusal };
    if (row.attempt >= 2) {
      // Bounds the damage of a program that hangs or kills the runtime (locally nothing enforces
      // cpuMs): a run its object died under is restarted automatically once, never again.
      return {
        action: "fail",
        error: errorBody(
          "bridge/too-many-attempts",
          `The run's Durable Object restarted under attempt ${row.attempt}; a run is restarted after its object restarted at most once, so a program that hangs or exhausts the runtime is not run again.`,
        ),
      };
    }
    return this.reload(row, []);
  }

  /**
   * Decides what becomes of a replay run found running but not live (recovery, re-attach): it
   * replays from the top, unless its fingerprint changed (`bridge/fingerprint-changed`, saying
   * what), or it was already restarted after an object restart and its journal did not grow since
   * (`bridge/too-many-attempts`: a program that kills its runtime before its next call is not run
   * forever). Loads the journal once, for the attempt to use.
   */
  planReplay(row: RunningExecution, port: JournalPort): RecoveryPlan {
    const changed = fingerprintChange(row.fingerprint, this.fingerprint(row.source));
    if (changed !== null) return { action: "fail", error: fingerprintError(changed) };
    let entries: readonly JournalEntry[];
    try {
      entries = port.lookup(row.id);
    } catch (error) {
      return { action: "fail", error: thrownBody(fromJournalFailure(error)) };
    }
    // journal_size is -1 when the latest attempt was started by execute or resume, not by recovery.
    if (row.attempt >= 2 && row.journalSize >= 0 && entries.length <= row.journalSize) {
      return {
        action: "fail",
        error: errorBody(
          "bridge/too-many-attempts",
          `The run's Durable Object restarted under attempt ${row.attempt}, which was itself a restart and journaled no new call; a replay run is restarted again only when its journal grew, so a program that hangs or exhausts the runtime is not run forever.`,
        ),
      };
    }
    return this.reload(row, entries);
  }

  /**
   * The stored program and input loaded again, with the journal entries the attempt replays from:
   * a restart plan, or a failure saying why it no longer loads (a module it imports was removed).
   */
  reload(row: RunningExecution, entries: readonly JournalEntry[]): RecoveryPlan {
    try {
      return {
        action: "restart",
        modules: this.#registry.graph(row.source),
        input: decode(row.input),
        entries,
      };
    } catch (error) {
      return { action: "fail", error: thrownBody(error) };
    }
  }

  /**
   * Why an interrupted `"restart"` run may not run again, or undefined when it may: a call marked
   * unsafeToRepeat ran (`unsafeCall`), or `attempt` was the last of `maxAttempts`. `reason` is the
   * interruption's, when known.
   */
  restartRefusal(
    unsafeCall: string | null | undefined,
    attempt: number,
    reason?: string,
  ): BridgeExecutionError | undefined {
    if (unsafeCall !== null && unsafeCall !== undefined) {
      return errorBody(
        "bridge/unsafe-to-repeat",
        `The run was interrupted${reason === undefined ? "" : ` (${reason})`} after ${unsafeCall} ran, which is marked unsafeToRepeat, so it is not restarted.`,
      );
    }
    const maxAttempts = this.#limits.maxAttempts;
    if (attempt >= maxAttempts) {
      return errorBody(
        "bridge/too-many-attempts",
        `The run was interrupted on each of its ${maxAttempts} attempts (maxAttempts)${reason === undefined ? "" : `; last: ${reason}`}.`,
      );
    }
    return undefined;
  }

  /** The fingerprint of `source` under the executor's configuration: what a replay is checked against. */
  fingerprint(source: string): BridgeReplayFingerprint {
    const sources: Array<{ specifier: string; source: string }> = [];
    for (const entry of this.#registry.bySpecifier.values()) {
      if (entry.kind === "source")
        sources.push({ specifier: entry.specifier, source: entry.source });
    }
    return fingerprintOf(source, sources, this.#compatibilityDate, this.#compatibilityFlags);
  }
}
