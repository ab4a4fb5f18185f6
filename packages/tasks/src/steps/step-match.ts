import { ReplayDivergedError } from "../errors";
import type { TaskStepKind } from "../store/rows";
import type { JournalRow } from "./journal";

/**
 * Why a step the handler reached does not match the journal row recorded at its name: another
 * kind of step, or an event wait for another type (`tasks/diverged`); null when it matches. Every
 * replay of a journal decides it here: an attempt's, and a recording's.
 */
export function stepMismatch(
  row: JournalRow,
  kind: TaskStepKind,
  eventType?: string,
): ReplayDivergedError | null {
  if (row.kind !== kind) {
    return new ReplayDivergedError(
      row.name,
      `journaled as a ${row.kind} step, replayed as ${kind}`,
    );
  }
  if (eventType !== undefined && row.event_type !== eventType) {
    return new ReplayDivergedError(
      row.name,
      `journaled waiting for "${row.event_type}", replayed waiting for "${eventType}"`,
    );
  }
  return null;
}
