import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { withOverrides } from "@durablekit/test-kit";
import { Lifecycle } from "agents/lifecycle";
import { Tasks as AnchorTasks, type TaskCallbacks } from "agents/tasks";
import type { BenchEnv } from "../workload";

/**
 * Shared plumbing of the tasks workloads: the write counter is test-kit's `countingState` (SQLite's
 * own `rowsWritten`, index writes included, summed when asked), used for both sides, and the
 * minimal host `agents/tasks` needs outside an Agent: a Lifecycle bound to this object.
 */
/**
 * `agents/tasks` installed on a Lifecycle whose host is this bench object (its ctx, counted). The
 * bench object has no `alarm()` handler, so the physical alarm calls are answered in memory (at no
 * cost, which favours the anchor); the workloads drive wakes with `lifecycle.alarm()` directly.
 */
export async function anchorTasks(
  state: DurableObjectState,
  env: BenchEnv,
  definitions: TaskCallbacks,
): Promise<{ tasks: AnchorTasks; lifecycle: Lifecycle }> {
  let alarm: number | null = null;
  const storage = withOverrides(state.storage, {
    getAlarm: async () => alarm,
    setAlarm: async (at: number | Date) => {
      alarm = typeof at === "number" ? at : at.getTime();
    },
    deleteAlarm: async () => {
      alarm = null;
    },
  });
  const ctx = withOverrides(state, { storage });
  const host = { ctx, env } as unknown as ConstructorParameters<typeof Lifecycle>[0];
  const lifecycle = new Lifecycle(host);
  const tasks = new AnchorTasks({ definitions });
  lifecycle.use(tasks);
  await lifecycle.start();
  return { tasks, lifecycle };
}

/** Polls `get` until the run reaches `state` (yielding to the event loop between polls). */
export async function waitForState(
  get: () => Promise<{ state: string } | null> | { state: string } | null,
  states: string[],
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const snapshot = await get();
    if (snapshot && states.includes(snapshot.state)) return;
    if (snapshot && ["failed", "cancelled"].includes(snapshot.state)) {
      throw new Error(`run ended ${snapshot.state}: ${JSON.stringify(snapshot)}`);
    }
    if (Date.now() > deadline) throw new Error(`run stuck: ${JSON.stringify(snapshot)}`);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/**
 * Resolves when a run event of a given type is seen — measured at the transition itself, not by
 * polling (a poll's timer latency would add a fixed cost to every figure). `see` is fed the events:
 * ours through `onEvent`, the anchor's through its `agents:task` diagnostics channel.
 */
export class EventWaiter {
  #waiting: { type: string; resolve: () => void } | undefined;

  see(type: string): void {
    if (this.#waiting?.type === type) {
      const { resolve } = this.#waiting;
      this.#waiting = undefined;
      resolve();
    }
  }

  /** A promise for the next event of `type`; call it before starting the work that emits it. */
  next(type: "task:completed" | "task:waiting"): Promise<void> {
    return new Promise((resolve) => {
      this.#waiting = { type, resolve };
    });
  }
}

/** Feeds the anchor's task events (published on the `agents:task` diagnostics channel) to a waiter. */
export function watchAnchorEvents(waiter: EventWaiter): () => void {
  const onMessage = (message: unknown) => waiter.see((message as { type: string }).type);
  subscribe("agents:task", onMessage);
  return () => unsubscribe("agents:task", onMessage);
}
