import type { TaskWaitReason } from "./rows";

/** What a failed run or a failed attempt reports: the error's name, message and code. */
export interface TaskErrorInfo {
  name: string;
  message: string;
  code?: string;
}

interface RunRef {
  runId: string;
  definition: string;
}

/**
 * A lifecycle event, delivered synchronously to the `onEvent` option. Replayed steps emit nothing:
 * `task:step:started` and `task:step:completed` mean the step's callback really ran.
 */
export type TaskEvent =
  | ({ type: "task:accepted" } & RunRef)
  | ({
      type: "task:attempt:started";
      attempt: number;
      /** The W3C `traceparent` the run was started under, when it was given one. */
      trace?: string;
    } & RunRef)
  | ({
      type: "task:attempt:interrupted";
      /** The attempt that died. */
      attempt: number;
      /** The step it left mid-execution, if the journal shows one. */
      step: string | null;
    } & RunRef)
  | ({ type: "task:step:started"; step: string; attempt: number } & RunRef)
  | ({ type: "task:step:completed"; step: string; attempt: number } & RunRef)
  | ({
      type: "task:step:retry";
      step: string;
      /** The attempt that failed. */
      attempt: number;
      /** When the next attempt is due. */
      retryAt: number;
      error: TaskErrorInfo;
    } & RunRef)
  | ({
      type: "task:waiting";
      reason: TaskWaitReason;
      /** When the run wakes, or null for an event wait without a timeout. */
      wakeAt: number | null;
      eventType?: string;
    } & RunRef)
  | ({ type: "task:event:buffered"; eventType: string } & RunRef)
  | ({ type: "task:event:delivered"; eventType: string } & RunRef)
  | ({ type: "task:completed" } & RunRef)
  | ({ type: "task:failed"; error: TaskErrorInfo } & RunRef)
  | ({ type: "task:cancelled"; reason: string | null } & RunRef)
  | ({ type: "task:deleted" } & RunRef);

/** The `type` of every {@link TaskEvent}. */
export type TaskEventType = TaskEvent["type"];
