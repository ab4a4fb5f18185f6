import { cancelMessage, settledId, settledMessage, toStored } from "../children/protocol";
import { TasksError } from "../errors";
import { errorInfo, errorText } from "../values";
import { AttemptStore } from "./attempt-store";
import { CallStore } from "./call-store";
import { ChildStore } from "./child-store";
import { EventBuffer } from "./event-buffer";
import { FlowStore } from "./flow-store";
import { LinkStore } from "./link-store";
import { FIRST_LEASE_MS, OutboxStore } from "./outbox-store";
import { RestartStore } from "./restart-store";
import type { RunRow } from "./rows";
import { RunLogStore } from "./run-log-store";
import { RunStore, type SettledRun, type Settlement } from "./run-store";
import { ScheduleStore } from "./schedule-store";
import { StepStore } from "./step-store";
import { TriggerStore } from "./trigger-store";

/** What a run's settlement records in its log: a failure's error, a cancel's reason. */
function settledData(settlement: Settlement): object | null {
  if (settlement.state === "failed") return { error: errorInfo(settlement.error ?? null) };
  if (settlement.state === "cancelled") return { reason: settlement.cancelReason ?? null };
  return null;
}

/** Raised inside a transaction when a fenced write finds another attempt holding the run. */
export class FenceLost {
  constructor(readonly runId: string) {}
}

/**
 * Every SQL statement of the package, by table: {@link TaskStore.runs} (`run-store.ts`),
 * {@link TaskStore.steps} (the journal, `step-store.ts`), {@link TaskStore.calls} (the calls of step
 * journals, `call-store.ts`), {@link TaskStore.attempts} (each run's attempts, `attempt-store.ts`)
 * and {@link TaskStore.events} (the event buffer, `event-buffer.ts`). Each table method is one
 * statement; the methods here span tables.
 * Callers group statements of one state change with {@link TaskStore.transaction}. Fenced methods
 * take the attempt's generation and return false (or throw {@link FenceLost} inside a transaction)
 * when another attempt holds the run.
 */
export class TaskStore {
  /** Run rows: claims, parks, settles, listings, wakes. */
  readonly runs: RunStore;
  /** Journal rows. */
  readonly steps: StepStore;
  /** Calls recorded through step journals. */
  readonly calls: CallStore;
  /** Each run's attempts, for its timeline. */
  readonly attempts: AttemptStore;
  /** Buffered events. */
  readonly events: EventBuffer;
  /** A parent's side of child runs: its children and the waits of `awaitChildren`. */
  readonly children: ChildStore;
  /** A child's side of its exchange with its parent (kept after it settles, for late starts). */
  readonly links: LinkStore;
  /** The messages owed to other objects. */
  readonly outbox: OutboxStore;
  /** What each restart of a run replaced. */
  readonly restarts: RestartStore;
  /** Each run's lifecycle log, and the tail of its event sequence (shared with the journal). */
  readonly log: RunLogStore;
  /** Flow keys' queue counters and rate windows, and the reads of runs by flow key. */
  readonly flows: FlowStore;
  /** Cron schedules and what their ticks did. */
  readonly schedules: ScheduleStore;
  /** How far each definition has taken each source's batches. */
  readonly triggers: TriggerStore;
  /**
   * Called with the messages queued in the outbox (by id), in the transaction that queued them, and
   * the time they are due again unless delivered first (the wake that backs their first delivery up).
   */
  onOwed: (ids: readonly string[], dueAt: number) => void = () => {};
  /**
   * Called in the transaction that settled (or deleted) a flow-controlled run, with its definition
   * and flow key: the key's queued runs take the slot it freed (flow control's `pump`).
   */
  onSlotFreed: (definition: string, key: string, now: number) => void = () => {};
  /** How long a settled child's link is kept (the `children.deliveryTimeoutMs` option). */
  linkRetentionMs = 0;
  readonly #storage: DurableObjectStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.runs = new RunStore(storage.sql);
    this.log = new RunLogStore(storage.sql);
    this.steps = new StepStore(storage.sql, this.log);
    this.calls = new CallStore(storage.sql);
    this.attempts = new AttemptStore(storage.sql);
    this.events = new EventBuffer(storage.sql);
    this.children = new ChildStore(storage.sql);
    this.links = new LinkStore(storage.sql);
    this.outbox = new OutboxStore(storage.sql);
    this.restarts = new RestartStore(storage.sql);
    this.flows = new FlowStore(storage.sql);
    this.schedules = new ScheduleStore(storage.sql);
    this.triggers = new TriggerStore(storage.sql);
  }

  /** Runs `fn` as one SQLite transaction: it commits when `fn` returns and rolls back if it throws. */
  transaction<T>(fn: () => T): T {
    try {
      return this.#storage.transactionSync(fn);
    } catch (error) {
      // Event numbers taken inside it were rolled back with it: read them again.
      this.log.forgetAll();
      throw error;
    }
  }

  /**
   * Holds a run no live attempt holds (see {@link RunStore.pause}); a run still marked running
   * (its attempt gone) records that attempt as interrupted in the same transaction. False when the
   * run is settled, already held, or unknown.
   */
  pause(runId: string, now: number): boolean {
    return this.transaction(() => {
      this.attempts.interrupted(runId);
      if (!this.runs.pause(runId, now)) return false;
      this.log.append(runId, "task:paused", { step: null }, now);
      return true;
    });
  }

  /**
   * Settles a run (fenced on `generation` when given, see {@link RunStore.settle}) and deletes the
   * events still buffered for it in the same transaction: no wait can consume them any more. False
   * (nothing written) when the run was not settled.
   */
  settle(runId: string, generation: string | null, settlement: Settlement, now: number): boolean {
    return this.transaction(() => {
      // Settled without an attempt (a cancel, the breaker) while a dead attempt still marks it running.
      if (generation === null) this.attempts.interrupted(runId);
      const settled = this.runs.settle(runId, generation, settlement, now);
      if (settled === null) return false;
      this.log.append(runId, `task:${settlement.state}`, settledData(settlement), now);
      this.events.deleteRun(runId);
      this.#queueOwed(runId, settlement, now);
      this.#freeSlot(settled, now);
      return true;
    });
  }

  /**
   * What a run owes other objects when it settles, queued in the settlement's transaction (so a
   * settled run never loses them): its settlement, to the parent that started it (its link is kept
   * for a start retried late), and a cancel to each of its own children still starting or running
   * (a child never outlives its parent's run), which its parent's view then reports cancelled.
   */
  #queueOwed(runId: string, settlement: Settlement, now: number): void {
    const owed: string[] = [];
    const link = this.links.settled(runId, now + this.linkRetentionMs);
    if (link !== undefined) {
      const cancelled =
        settlement.state === "cancelled"
          ? errorText(
              new TasksError(
                "tasks/cancelled",
                `Child run "${runId}" was cancelled${settlement.cancelReason ? `: ${settlement.cancelReason}` : ""}.`,
              ),
            )
          : null;
      const message = settledMessage(
        link,
        link.parent_run_id as string,
        link.step as string,
        link.idx as number,
        runId,
        settlement.state,
        settlement.result ?? null,
        settlement.state === "failed" ? (settlement.error ?? null) : cancelled,
      );
      owed.push(settledId(link.key));
      this.outbox.enqueue(owed[0] as string, link.parent as string, toStored(message), now);
    }
    const reason = `its parent run "${runId}" ${settlement.state}`;
    const live = this.children.cancelLive(
      runId,
      errorText(new TasksError("tasks/cancelled", `Child run cancelled: ${reason}.`)),
      now,
    );
    for (const child of live) {
      const id = `cancel:${child.key}`;
      this.outbox.enqueue(id, child.target, toStored(cancelMessage(child, reason)), now);
      owed.push(id);
    }
    if (owed.length > 0) this.onOwed(owed, now + FIRST_LEASE_MS);
  }

  /** A flow-controlled run left progress: its key's queue moves, in the same transaction. */
  #freeSlot(settled: SettledRun, now: number): void {
    if (settled.flow_key !== null) this.onSlotFreed(settled.definition, settled.flow_key, now);
  }

  /**
   * Claims a run for attempt `attempt` (see {@link RunStore.claim}, which also keeps the attempt's
   * claim time on the run row); when the run was still running, the attempt before it was cut short
   * and leaves its row. One transaction; false (nothing written) when the claim lost.
   */
  claim(
    runId: string,
    seen: string | null,
    generation: string,
    attempt: number,
    deadline: number,
    breaker: { progress: number; stalls: number },
    now: number,
    cancelling = false,
  ): boolean {
    // A first claim ends no earlier attempt: its one conditional update is the whole claim.
    if (attempt === 1)
      return this.runs.claim(runId, seen, generation, attempt, deadline, breaker, now, cancelling);
    try {
      return this.transaction(() => {
        this.attempts.interrupted(runId);
        if (
          !this.runs.claim(runId, seen, generation, attempt, deadline, breaker, now, cancelling)
        ) {
          // Rolls the transaction back: nothing of a lost claim stays written.
          throw new FenceLost(runId);
        }
        return true;
      });
    } catch (error) {
      if (error instanceof FenceLost) return false;
      throw error;
    }
  }

  /**
   * Deletes a completed run of an attempt that holds it (fenced), with its journals and events;
   * its settlement (with `result`) is queued for its parent as {@link settle} queues it.
   */
  deleteSettledByAttempt(runId: string, generation: string, result: string, now: number): boolean {
    const deleted = this.runs.deleteHeld(runId, generation);
    if (deleted === null) return false;
    this.#queueOwed(runId, { state: "completed", result }, now);
    this.#deleteRunData(runId);
    this.#freeSlot(deleted, now);
    return true;
  }

  /** Deletes one terminal run with its journals and events. */
  deleteTerminalRun(runId: string): boolean {
    const deleted = this.runs.deleteTerminal(runId);
    if (deleted) this.#deleteRunData(runId);
    return deleted;
  }

  /** Deletes a run's journal (its steps and step journals), attempts and buffered events (not the run row). */
  #deleteRunData(runId: string): void {
    this.steps.deleteRun(runId);
    this.calls.deleteRun(runId);
    this.attempts.deleteRun(runId);
    this.events.deleteRun(runId);
    this.children.deleteRun(runId);
    this.restarts.deleteRun(runId);
    this.log.deleteRun(runId);
  }

  /**
   * Restarts `run` from its journal row `from` (at position `fromSeq`), in one transaction: the
   * attempt that settled it (or died holding it) is recorded, the rows from `fromSeq` on are copied
   * to the restart's record and dropped from the journal with the child waits they held, and the
   * run is pending and due at `now`, with the deadline `deadlineAt` (or none); `readmit` then
   * runs in the same transaction (flow control may queue the run). Answers the restart's number
   * and how many rows it dropped.
   */
  restart(
    run: RunRow,
    from: string,
    fromSeq: number,
    deadlineAt: number | null,
    now: number,
    readmit: () => void = () => {},
  ): { restart: number; dropped: number } {
    return this.transaction(() => {
      this.attempts.interrupted(run.run_id);
      this.attempts.settled(run.run_id);
      const restart = this.restarts.next(run.run_id);
      this.restarts.record(run.run_id, restart, from, fromSeq, run, now);
      this.children.deleteWaitsFrom(run.run_id, fromSeq);
      const dropped = this.steps.dropFrom(run.run_id, fromSeq);
      this.runs.restart(run.run_id, deadlineAt, now);
      this.log.append(run.run_id, "task:restarted", { from, restart, dropped }, now);
      readmit();
      return { restart, dropped };
    });
  }

  /**
   * Delivers an event to a run parked on it: the waiting journal row becomes the completed event
   * and the run becomes due now. Two rows in one transaction; false if the run stopped waiting.
   */
  deliverEvent(runId: string, step: string, payload: string, now: number): boolean {
    return this.transaction(() => {
      // Read while the run still waits: its log alone knows the number (see RunLogStore.next).
      this.log.next(runId);
      if (!this.runs.wakeForEvent(runId, step, now)) return false;
      this.steps.completeWaiting(runId, step, payload, now);
      return true;
    });
  }
}
