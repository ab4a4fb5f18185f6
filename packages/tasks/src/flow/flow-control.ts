import { checkName } from "../arguments";
import { TasksError } from "../errors";
import type { FlowRow, FlowStore } from "../store/flow-store";
import type { TaskQueueReason } from "../store/rows";
import type { FlowRule, ResolvedDefinition } from "./definition";

/** The flow keys of schedules that queue overlapping ticks: `__dk:schedule:<id>`, one slot each. */
export const SCHEDULE_LANE_PREFIX = "__dk:schedule:";

/** One slot, in order: the lane of a schedule whose ticks queue behind its last run. */
const SCHEDULE_LANE: FlowRule = {
  key: null,
  concurrency: { limit: 1, onBusy: "queue" },
  rateLimit: null,
  debounce: null,
};

/** Where a new run goes ({@link FlowControl.place}). */
export type FlowPlacement =
  /** It takes a slot now: accepted `pending`. */
  | { kind: "start" }
  /** It waits: accepted `queued`, for `reason`, at queue position `seq` (null for a debounce). */
  | { kind: "queue"; reason: TaskQueueReason; seq: number | null; wakeAt: number | null }
  /** It joins the key's debounced run `runId`, which takes its input and wakes at `wakeAt`. */
  | { kind: "gather"; runId: string; wakeAt: number };

/** What placing a run did to its key's queue besides: the runs a `keep-latest` key cancelled. */
export interface FlowMoves {
  replaced: string[];
}

/** What {@link FlowControl} needs of the engine. */
export interface FlowControlHost {
  store: FlowStore;
  /** The definition of `name`, or undefined when it is gone. */
  definition(name: string): ResolvedDefinition | undefined;
  /** Moves a queued run to `pending`, due at `now`, with its log row; false if it was not queued. */
  dequeue(runId: string, now: number): boolean;
  /** Puts a queued run (a debounce that ended) in its key's queue at `seq`. */
  requeue(runId: string, reason: TaskQueueReason, seq: number, now: number): void;
  /** Queues a pending run again at `seq` (a restart over the limit). */
  queueAgain(runId: string, seq: number, now: number): boolean;
  /** Cancels a queued run (one transaction with the caller's). */
  cancelQueued(runId: string, reason: string, now: number): boolean;
}

/**
 * Admission of flow-controlled runs: concurrency per key, rate limits, debounce and priority. Every
 * method runs inside the caller's transaction (the accept, the settle that frees a slot, the alarm
 * that finds a rate slot free), so a queue never moves without the write that moved it.
 *
 * A key's slots in use are counted from its runs' states (`FlowStore.inProgress`); its queue is
 * read first in line first from the `by_flow` index. Nothing is written per wake of another run:
 * a queued run is read only when a slot of its own key frees.
 */
export class FlowControl {
  readonly #host: FlowControlHost;

  constructor(host: FlowControlHost) {
    this.#host = host;
  }

  /** The admission rule of a key, or null when its definition is gone or lost its flow control. */
  ruleOf(definition: string, key: string): FlowRule | null {
    if (key.startsWith(SCHEDULE_LANE_PREFIX)) return SCHEDULE_LANE;
    return this.#host.definition(definition)?.flow ?? null;
  }

  /**
   * The flow key of a run of `definition` with `input`: its `key` callback's answer, or `""` (one
   * key for the definition) without one.
   *
   * @throws TasksError `tasks/invalid-argument` when the callback throws or answers no key.
   */
  keyOf(definition: ResolvedDefinition, input: unknown): string {
    const compute = definition.flow?.key;
    if (compute === null || compute === undefined) return "";
    let key: unknown;
    try {
      key = compute(input);
    } catch (error) {
      throw new TasksError(
        "tasks/invalid-argument",
        `The key of definition "${definition.name}" threw for this input; nothing was written.`,
        { cause: error },
      );
    }
    checkName(key, `The key of definition "${definition.name}"`);
    return key;
  }

  /**
   * Places a new run of `definition` under `key` at `now`, writing the key's row when the run
   * queues or takes a rate slot; `moves.replaced` gets the runs a `keep-latest` key cancels. A
   * debounce applies when `gather` (a `run()` call; a child run's start is placed for a slot).
   *
   * @throws TasksError `tasks/busy` (`onBusy: "refuse"`) or `tasks/rate-limited`
   *   (`onLimited: "refuse"`) when the run cannot start now; nothing is written.
   */
  place(
    definition: string,
    key: string,
    now: number,
    moves: FlowMoves,
    gather: boolean,
  ): FlowPlacement {
    const rule = this.ruleOf(definition, key);
    if (rule === null) return { kind: "start" };
    if (rule.debounce !== null && gather) {
      const { periodMs, maxDelayMs } = rule.debounce;
      const open = this.#host.store.debouncing(definition, key);
      if (open !== undefined) {
        const wakeAt = Math.min(now + periodMs, open.created_at + maxDelayMs);
        return { kind: "gather", runId: open.run_id, wakeAt };
      }
      return {
        kind: "queue",
        reason: "debounce",
        seq: null,
        wakeAt: now + Math.min(periodMs, maxDelayMs),
      };
    }
    return this.#slotFor(definition, key, rule, now, moves);
  }

  /**
   * A debounced run whose quiet period ended: it takes a slot now (`true`: it is pending) or joins
   * its key's queue.
   */
  releaseDebounced(runId: string, definition: string, key: string, now: number): boolean {
    const rule = this.ruleOf(definition, key);
    const moves: FlowMoves = { replaced: [] };
    const slot =
      rule === null
        ? ({ kind: "start" } as const)
        : this.#slotFor(definition, key, { ...rule, debounce: null }, now, moves, true);
    if (slot.kind === "start") return this.#host.dequeue(runId, now);
    if (slot.kind === "queue" && slot.seq !== null) {
      this.#host.requeue(runId, slot.reason, slot.seq, now);
    }
    return false;
  }

  /**
   * A restart made a settled run of `key` pending again: when the key's slots are all taken (or
   * runs wait for them), it waits in the queue instead. True when it was queued.
   */
  readmit(runId: string, definition: string, key: string, now: number): boolean {
    const store = this.#host.store;
    const limit = this.ruleOf(definition, key)?.concurrency?.limit;
    if (limit === undefined) return false;
    const ahead = store.queued(definition, key, 1).length > 0;
    // The restarted run is pending now, so it counts itself among the runs in progress.
    if (!ahead && store.inProgress(definition, key) <= limit) return false;
    const row = store.get(definition, key);
    const seq = (row?.seq ?? 0) + 1;
    this.#keep(definition, key, row, {
      seq,
      starts: row?.starts === null || row?.starts === undefined ? null : JSON.parse(row.starts),
      wakeAt: row?.wake_at ?? null,
      gone: false,
    });
    return this.#host.queueAgain(runId, seq, now);
  }

  /**
   * Lets the key's queued runs take the slots free at `now`, first in line first, and keeps the
   * key's row (its wake at the next rate slot, or gone once nothing waits and no window is open).
   * Called in the transaction that freed a slot (a settle), or by the alarm at the key's wake.
   */
  pump(definition: string, key: string, now: number): string[] {
    const store = this.#host.store;
    const rule = this.ruleOf(definition, key);
    const row = store.get(definition, key);
    const starts = rule?.rateLimit ? windowOf(row, rule.rateLimit.periodMs, now) : [];
    let active = rule?.concurrency ? store.inProgress(definition, key) : 0;
    const dequeued: string[] = [];
    let wakeAt: number | null = null;
    let empty = false;
    for (;;) {
      if (rule?.concurrency && active >= rule.concurrency.limit) break;
      if (rule?.rateLimit && starts.length >= rule.rateLimit.limit) {
        wakeAt = slotAt(starts, rule.rateLimit);
        break;
      }
      const head = store.queued(definition, key, 1)[0];
      if (head === undefined) {
        empty = true;
        break;
      }
      if (this.#host.dequeue(head, now)) dequeued.push(head);
      active += 1;
      if (rule?.rateLimit) starts.push(now);
    }
    if (empty && wakeAt === null && rule?.rateLimit && starts.length > 0) {
      // Nothing waits; the row stays until the window of its last start has passed.
      wakeAt = (starts.at(-1) as number) + rule.rateLimit.periodMs;
    }
    this.#keep(definition, key, row, {
      seq: row?.seq ?? 0,
      starts: rule?.rateLimit ? starts : null,
      wakeAt,
      gone: empty && (starts.length === 0 || (wakeAt !== null && wakeAt <= now)),
    });
    return dequeued;
  }

  /**
   * A slot for a run of `key`: now (its start written into the rate window), or a place in the
   * queue (the key's row holds the position given out). `released` for a debounced run that
   * ends: it is placed as a new run would be, without being refused.
   */
  #slotFor(
    definition: string,
    key: string,
    rule: FlowRule,
    now: number,
    moves: FlowMoves,
    released = false,
  ): FlowPlacement {
    const store = this.#host.store;
    const ahead = store.queued(definition, key, 1).length > 0;
    const row = store.get(definition, key);
    const starts = rule.rateLimit ? windowOf(row, rule.rateLimit.periodMs, now) : [];
    const concurrency = rule.concurrency;
    const busy =
      concurrency !== null && (ahead || store.inProgress(definition, key) >= concurrency.limit);
    const limited =
      !busy && rule.rateLimit !== null && (ahead || starts.length >= rule.rateLimit.limit);
    if (!busy && !limited) {
      if (rule.rateLimit !== null) {
        starts.push(now);
        this.#keep(definition, key, row, {
          seq: row?.seq ?? 0,
          starts,
          wakeAt: row?.wake_at ?? now + rule.rateLimit.periodMs,
          gone: false,
        });
      }
      return { kind: "start" };
    }
    if (!released && busy && concurrency?.onBusy === "refuse") {
      throw new TasksError(
        "tasks/busy",
        `Definition "${definition}" has ${concurrency.limit} run(s) of key ${JSON.stringify(key)} in progress (concurrency.onBusy "refuse"); try again when one settles.`,
      );
    }
    if (!released && limited && rule.rateLimit?.onLimited === "refuse") {
      const at = slotAt(starts, rule.rateLimit);
      throw new TasksError(
        "tasks/rate-limited",
        `Definition "${definition}" started ${rule.rateLimit.limit} run(s) of key ${JSON.stringify(key)} in the last ${rule.rateLimit.periodMs} ms (rateLimit.onLimited "refuse"); the next slot frees at ${new Date(at).toISOString()}.`,
      );
    }
    if (!released && busy && concurrency?.onBusy === "keep-latest") {
      for (const runId of store.queued(definition, key, 10_000)) {
        if (
          this.#host.cancelQueued(runId, "replaced by a newer run of its key (keep-latest)", now)
        ) {
          moves.replaced.push(runId);
        }
      }
    }
    const seq = (row?.seq ?? 0) + 1;
    const wakeAt =
      limited && rule.rateLimit !== null && starts.length >= rule.rateLimit.limit
        ? slotAt(starts, rule.rateLimit)
        : (row?.wake_at ?? null);
    this.#keep(definition, key, row, {
      seq,
      starts: rule.rateLimit ? starts : null,
      wakeAt,
      gone: false,
    });
    return { kind: "queue", reason: busy ? "concurrency" : "rate", seq, wakeAt: null };
  }

  /** Writes the key's row when it changed (or deletes it when `gone`). */
  #keep(
    definition: string,
    key: string,
    row: FlowRow | undefined,
    next: { seq: number; starts: number[] | null; wakeAt: number | null; gone: boolean },
  ): void {
    const store = this.#host.store;
    if (next.gone) {
      if (row !== undefined) store.delete(definition, key);
      return;
    }
    const starts = next.starts === null ? null : JSON.stringify(next.starts);
    if (
      row !== undefined &&
      row.seq === next.seq &&
      row.starts === starts &&
      row.wake_at === next.wakeAt
    ) {
      return;
    }
    store.put({ definition, flow_key: key, seq: next.seq, starts, wake_at: next.wakeAt });
  }
}

/** The key's starts still inside the rate window at `now`, oldest first. */
function windowOf(row: FlowRow | undefined, periodMs: number, now: number): number[] {
  if (row?.starts === null || row?.starts === undefined) return [];
  const all = JSON.parse(row.starts) as number[];
  return all.filter((at) => at > now - periodMs);
}

/** When the next start fits the window: the `limit`-th newest start leaves it. */
function slotAt(starts: readonly number[], rate: { limit: number; periodMs: number }): number {
  return (starts[starts.length - rate.limit] as number) + rate.periodMs;
}
