import type { TaskScheduleTick } from "./flow/options";
import type { TaskQueueReason, TaskWaitReason } from "./store/rows";

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

/** The object a message about child runs went to or came from: its namespace binding and id. */
export interface TaskChildAddress {
  binding: string;
  id: string;
}

/** Which message of the child-run protocol an event is about, and the exchange it names. */
interface ChildMessageRef {
  message: "start" | "settled" | "cancel";
  /** The exchange's key (public; never its secret). */
  key: string;
}

/**
 * A lifecycle event, delivered synchronously to the `onEvent` option. Replayed steps emit nothing:
 * `task:step:started` and `task:step:completed` mean the step's callback really ran.
 */
export type TaskEvent =
  | ({ type: "task:accepted" } & RunRef)
  /** The run was accepted `queued` by its definition's flow control, for `reason`. */
  | ({ type: "task:queued"; reason: TaskQueueReason } & RunRef)
  /** A queued run took its slot: it is pending, due now. */
  | ({ type: "task:dequeued" } & RunRef)
  /**
   * A schedule took its due ticks: `runIds` the runs they started (a tick whose run is already
   * known starts nothing again), `missed` the ticks it skipped after downtime (beyond `backfill`),
   * `skipped` the ticks it skipped because its last run was still in progress (`overlap: "skip"`).
   */
  | ({ type: "task:schedule:ticked" } & TaskScheduleTick)
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
  /**
   * The run is held (`pause`): `step` is the step its attempt stopped before or parked at, or null
   * when no attempt was live (a pending or parked run held at once).
   */
  | ({ type: "task:paused"; step: string | null } & RunRef)
  /** A held run was let go (`resume`): it is due now, or a pause not yet taken was withdrawn. */
  | ({ type: "task:resumed" } & RunRef)
  /** The run was restarted from step `from`: its `restart` number and the journal rows it dropped. */
  | ({ type: "task:restarted"; from: string; restart: number; dropped: number } & RunRef)
  | ({ type: "task:deleted" } & RunRef)
  /** A child run this run started answered its start (parent's side). */
  | ({
      type: "task:child:started";
      step: string;
      childRunId: string;
      target: TaskChildAddress;
    } & RunRef)
  /** A child's settlement was applied to this run (parent's side); a duplicate emits nothing. */
  | ({
      type: "task:child:settled";
      step: string;
      childRunId: string;
      state: "completed" | "failed" | "cancelled";
    } & RunRef)
  /** A message this object owed another object was acknowledged (and deleted from its outbox). */
  | ({ type: "task:child:delivered"; target: TaskChildAddress } & ChildMessageRef)
  /**
   * A message about child runs was refused and changed nothing: one this object received (no
   * `target`; `message` and `key` null when it was too malformed to tell), or one it sent that the
   * receiver refused (`target`: it is retried until `deliveryTimeoutMs`).
   */
  | {
      type: "task:child:refused";
      message: ChildMessageRef["message"] | null;
      key: string | null;
      code: string;
      reason: string;
      target?: TaskChildAddress;
    }
  /** A message this object owed was dropped after `deliveryTimeoutMs` without an acknowledgement. */
  | ({ type: "task:child:dropped"; target: TaskChildAddress; attempts: number } & ChildMessageRef);

/** The `type` of every {@link TaskEvent}. */
export type TaskEventType = TaskEvent["type"];
