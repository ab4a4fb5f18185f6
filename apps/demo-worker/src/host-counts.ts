/**
 * What the demo host modules really did, per execution: counts kept in the object's SQLite
 * (`demo_host_counters`, see `HostCounters`), so they survive evictions and restarts and tell a call
 * answered from a journal (not counted) from one that ran (counted).
 */
export interface HostCounts {
  /** Jobs created (a repeated `createJob` of the same call is not counted again). */
  creates: number;
  /** Runs started (likewise). */
  starts: number;
  /** `run.wait()` calls that ran. */
  waits: number;
  /** Job and Run objects revived from a journal by `[handle.revive]`. */
  revives: number;
  /** `wait()` calls served by a revived Run. */
  revivedWaits: number;
  /** Job and Run objects made, live or revived. */
  targets: number;
  /** Job and Run objects disposed (at the end of a run attempt, every target is). */
  disposals: number;
  /** `approval()` calls that ran (each interrupts its run). */
  approvals: number;
  /** Processes spawned. */
  spawns: number;
  /** `process.read()` calls that ran. */
  reads: number;
}
