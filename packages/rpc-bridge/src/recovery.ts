import { decode } from "@durablekit/handle-journal";
import type { ExecutionError } from "./execution";
import { errorBody, restartRefusal, thrownBody } from "./execution-end";
import type { RunningExecution } from "./execution-store";
import { buildModuleGraph } from "./module-graph";
import type { ModuleRegistry } from "./module-registry";

/** What becomes of an execution a previous instance left running. */
export type RecoveryPlan =
  | { action: "fail"; error: ExecutionError }
  | { action: "restart"; modules: Record<string, string>; input: unknown };

/**
 * Decides what becomes of an execution whose Durable Object restarted under it: an
 * `onInterrupt: "fail"` one fails with `bridge/interrupted`; a `"restart"` one runs again from the
 * top unless a call marked unsafeToRepeat ran, `maxAttempts` is used up, or its stored program or
 * input no longer loads (a module it imports was removed), when it fails saying which.
 */
export function planRecovery(
  row: RunningExecution,
  registry: ModuleRegistry,
  maxAttempts: number,
): RecoveryPlan {
  if (row.onInterrupt !== "restart") {
    return {
      action: "fail",
      error: errorBody(
        "bridge/interrupted",
        "The run was interrupted when its Durable Object restarted (onInterrupt: fail).",
      ),
    };
  }
  const refusal = restartRefusal(row.unsafeCall, row.attempt, maxAttempts);
  if (refusal) return { action: "fail", error: refusal };
  try {
    return {
      action: "restart",
      modules: buildModuleGraph(registry, row.source),
      input: decode(row.input),
    };
  } catch (error) {
    return { action: "fail", error: thrownBody(error) };
  }
}
