import type { ProbeArm } from "./probe-store";

/**
 * What `crashFanOut` asks of the probes of a fan-out's objects, by module state. The objects a
 * fan-out reaches are named by the user's code, so the driver cannot arm them before the run
 * starts: it arms a role here (the start that creates a child), and the probe of the object that
 * receives that start copies the arm into its own SQLite in the turn it applies the start. The
 * probes and the driver run in one isolate under `@cloudflare/vitest-plugin`, and module state
 * outlives object resets; nothing here is set outside a `crashFanOut` test, so a probe in
 * production stays inert.
 */

/** What the probe does to a message a test armed a fault for. */
export type TestingMessageFault = "lose" | "lose-reply" | "duplicate";

interface ChildArm extends ProbeArm {
  /** The start message (`start:<step>#<index>`) whose receiving object is armed. */
  start: string;
}

let childArm: ChildArm | null = null;
let messageArm: { label: string; fault: TestingMessageFault } | null = null;
const fired: Array<{ label: string; fault: TestingMessageFault }> = [];
/** Attempts running and `receiveTasks` calls being applied now, by object id (the driver waits for them). */
const inflight = new Map<string, number>();

/** Arms a crash in the object that receives `start` (once: the first receipt copies it). */
export function armChild(arm: ChildArm | null): void {
  childArm = arm;
}

/** The child arm for the object receiving `start`, consumed; null when none waits for it. */
export function takeChildArm(start: string): ProbeArm | null {
  if (childArm === null || childArm.start !== start) return null;
  const { label, position, async } = childArm;
  childArm = null;
  return { label, position, async };
}

/** Arms one fault of the first message labelled `label` (null: none). */
export function armMessage(arm: { label: string; fault: TestingMessageFault } | null): void {
  messageArm = arm;
  fired.length = 0;
}

/** The fault armed for the message `label`, consumed and noted as fired; null when none is. */
export function takeMessageFault(label: string): TestingMessageFault | null {
  if (messageArm === null || messageArm.label !== label) return null;
  const { fault } = messageArm;
  messageArm = null;
  fired.push({ label, fault });
  return fault;
}

/** The message faults that fired since the last {@link armMessage}. */
export function firedMessageFaults(): ReadonlyArray<{ label: string; fault: TestingMessageFault }> {
  return fired;
}

/** Notes an attempt or a `receiveTasks` call entering (+1) or leaving (-1) the object `objectId`. */
export function noteBusy(objectId: string, delta: 1 | -1): void {
  const n = (inflight.get(objectId) ?? 0) + delta;
  if (n <= 0) inflight.delete(objectId);
  else inflight.set(objectId, n);
}

/** Whether an attempt runs, or a probe applies a message, in the object `objectId` now. */
export function busyIn(objectId: string): boolean {
  return inflight.has(objectId);
}

/** Whether an attempt runs, or a probe applies a message, in any object now. */
export function busy(): boolean {
  return inflight.size > 0;
}

/** Forgets the calls in flight: a reset ended them (their promises may never settle). */
export function clearBusy(): void {
  inflight.clear();
}
