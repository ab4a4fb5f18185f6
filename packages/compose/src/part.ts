/**
 * A part that needs wakes: tasks, streams retention, the bridge's recovery, … Every durablekit
 * part that wakes implements this, and {@link Alarms} drives any number of them from the Durable
 * Object's one alarm.
 */
export interface AlarmPart {
  /**
   * Does the part's due work (recover runs, sweep expired streams, …). Called from the Durable
   * Object's `alarm()` through {@link Alarms.alarm}; safe to call when nothing is due.
   */
  alarm(): Promise<void>;
  /** When the part next needs {@link AlarmPart.alarm} (epoch ms), or `null` when it needs no wake. */
  nextWakeAt(): number | null;
}

/** True when `value` has the {@link AlarmPart} methods. */
export function isAlarmPart(value: unknown): value is AlarmPart {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as AlarmPart).alarm === "function" &&
    typeof (value as AlarmPart).nextWakeAt === "function"
  );
}
