import type { CallBudget } from "./admission";
import { type CallState, callLabel } from "./call-state";
import { dataSize, measurable } from "./data-size";
import { disposeStray, type HandleTable } from "./handle-table";
import { writeResult } from "./values";
import { type Answer, tagged } from "./wire";

const LIMIT = "bridge/limit-response-bytes";

/**
 * Shapes what a call's host code returned into the call's answer: RpcTargets and functions are
 * registered in the run's handle table (keyed below the call), errors and URLs become tagged
 * records, and the data part is measured against `maxResponseBytes` and counted toward
 * `maxTotalBytes`. A primitive is answered as itself after one size check. A refused response
 * releases what it registered and disposes the objects it returned that the program does not
 * already hold.
 * @throws BridgeError `bridge/limit-response-bytes`, `bridge/limit-total-bytes`,
 * `bridge/limit-handles`, `bridge/unserializable`.
 */
export function shapeResponse(
  value: unknown,
  call: CallState,
  table: HandleTable,
  budget: CallBudget,
): Answer {
  const max = budget.limits.maxResponseBytes;
  if ((typeof value !== "object" && typeof value !== "function") || value === null) {
    const size = dataSize(value, max, "result", LIMIT, "maxResponseBytes");
    budget.chargeResponse(size, () => callLabel(call));
    return value;
  }
  const handle = call.handle;
  const specifier = handle.kind === "module" ? handle.module.specifier : handle.specifier;
  const fresh: number[] = [];
  try {
    const outgoing = writeResult(value, table, specifier, call.key, fresh);
    const measured = outgoing.streams ? measurable(outgoing.wire) : outgoing.wire;
    const size = dataSize(measured, max, "result", LIMIT, "maxResponseBytes");
    budget.chargeResponse(size, () => callLabel(call));
    return outgoing.special ? tagged(outgoing.wire) : outgoing.wire;
  } catch (error) {
    for (const id of fresh) table.forget(id);
    disposeStray(value, (v) => table.holds(v));
    throw error;
  }
}
